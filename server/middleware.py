"""Protocol-level behaviour of the server, in one middleware on every inbound message.

- tools/list: every input schema says `additionalProperties: false` (the tools refuse
  unknown arguments, tools/common.py), so a client can tell before calling;
- tools/call: the text copy of a structured result is compact JSON, not a pretty-printed
  second copy; a result over the size limit is logged (tools cut their own lists);
- prompts/get: an unknown prompt or a bad argument is INVALID_PARAMS (-32602), not code 0;
- initialize: advertises `resources.listChanged` (runs appear) and `logging`;
- logging/setLevel: remembered per connection (handshake-era clients; notify.py sends);
- resources/list: the caller's runs are listed with their main artifacts.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from rooflens.analyzers.pipeline.steps import PREPARED, REPORTED
from rooflens.server.notify import LEVELS, remember_level
from rooflens.server.state import AppState

log = logging.getLogger("rooflens")


class ServerMiddleware:
    """See the module docstring; `limit` is the result size limit in bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        method = ctx.method
        if method == "logging/setLevel":
            return self._set_level(ctx)
        if method == "prompts/get":
            try:
                return await call_next(ctx)
            except ValueError as exc:
                raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if method == "tools/call":
            self._compact(ctx, result)
        elif method == "tools/list":
            for tool in result.get("tools", []):
                tool.get("inputSchema", {}).setdefault("additionalProperties", False)
        elif method == "initialize":
            caps = result.setdefault("capabilities", {})
            caps.setdefault("resources", {})["listChanged"] = True
            caps.setdefault("logging", {})
        elif method == "resources/list":
            runs = await anyio.to_thread.run_sync(_run_resources, ctx)
            result.setdefault("resources", []).extend(runs)
        return result

    def _compact(self, ctx: ServerRequestContext[Any, Any], result: dict) -> None:
        structured = result.get("structuredContent")
        if structured is not None:
            text = json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
            result["content"] = [{"type": "text", "text": text}]
        size = len(json.dumps(result, separators=(",", ":"), ensure_ascii=False).encode())
        if size > self.limit:
            name = (ctx.params or {}).get("name")
            log.warning("tool %s returned %d bytes, over the %d-byte limit", name, size, self.limit)

    @staticmethod
    def _set_level(ctx: ServerRequestContext[Any, Any]) -> HandlerResult:
        level = (ctx.params or {}).get("level")
        if level not in LEVELS:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown log level {level!r}; use one of {', '.join(LEVELS)}",
            )
        state: AppState = ctx.lifespan_context
        remember_level(state.log_levels, ctx.session, level)
        return {}


def _run_resources(ctx: ServerRequestContext[Any, Any]) -> list[dict[str, Any]]:
    """The main artifacts of the runs the caller can see."""
    state: AppState = ctx.lifespan_context
    owner = state.owner(getattr(ctx.request, "headers", None))
    out = []
    for run in state.runs.visible(owner, state.isolate):
        base = f"rooflens://runs/{run.id}"
        trace = run.record.trace.name
        items = [("tables", "perf-report tables", "application/json")]
        if run.done(PREPARED):
            items.append(("manifest", "category manifest", "application/json"))
        if run.done(REPORTED):
            items.append(("report", "analysis report", "text/markdown"))
        out += [
            {
                "uri": f"{base}/{leaf}",
                "name": f"{run.id} {what}",
                "description": f"{what} of {trace}",
                "mimeType": mime,
            }
            for leaf, what, mime in items
        ]
    return out
