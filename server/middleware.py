"""Protocol-level behaviour of the server, in one middleware on every inbound message.

- tools/list: every input schema says `additionalProperties: false` (tools/call refuses
  unknown arguments), so a client can tell before calling; the schemas are reduced
  (server/schemas.py) and descriptions keep single spaces, since every session pays for them;
- tools/call: an argument the tool does not take is refused, for every tool, before
  anything else is checked (the one place this rule lives), naming the ones it takes; a
  malformed argument is reported as `argument: what is wrong`, not as pydantic's error dump;
  the text copy of a structured result is compact JSON, not a pretty-printed second copy; a
  result over the size limit is logged (tools cut their own lists);
- prompts/get: an unknown prompt or a bad argument is INVALID_PARAMS (-32602), not code 0;
- initialize: advertises `resources.listChanged` (runs appear) and `logging`;
- logging/setLevel: remembered per connection (handshake-era clients; notify.py sends);
- resources/list: the runs listed to the caller (a session's own; none to a stateless HTTP
  client, which holds the keyed run ids it was given) with their main artifacts.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import anyio.to_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent

from rooflens.analyzers.pipeline.steps import PREPARED, REPORTED

from .notify import LEVELS, remember_level
from .schemas import compact, result_shape
from .state import AppState

log = logging.getLogger("rooflens")


class ServerMiddleware:
    """See the module docstring; `limit` is the result size limit in bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.server: Any = None  # the MCPServer, set once it is built (for tool schemas)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        method = ctx.method
        if method == "logging/setLevel":
            return self._set_level(ctx)
        if method == "prompts/get":
            try:
                return await call_next(ctx)
            except ValueError as exc:
                raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        if method == "tools/call" and (refused := await self._unknown_arguments(ctx)):
            error = CallToolResult(content=[TextContent(type="text", text=refused)], is_error=True)
            return error.model_dump(by_alias=True, exclude_none=True, mode="json")
        result = await call_next(ctx)
        if not isinstance(result, dict):
            return result
        if method == "tools/call":
            _readable_validation_error(result)
            self._compact(ctx, result)
        elif method == "tools/list":
            for tool in result.get("tools", []):
                _listed(tool)
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

    async def _unknown_arguments(self, ctx: ServerRequestContext[Any, Any]) -> str | None:
        """The refusal of arguments the called tool does not take, with the ones it does
        (silently dropping them hid a model's mistake: comparison_scope, executive_summary)."""
        params = ctx.params or {}
        name, given = params.get("name"), params.get("arguments") or {}
        if self.server is None or not isinstance(given, dict):
            return None
        tool = next((t for t in await self.server.list_tools() if t.name == name), None)
        if tool is None:
            return None
        valid = sorted((tool.input_schema or {}).get("properties", {}))
        unknown = sorted(set(given) - set(valid))
        if not unknown:
            return None
        return (
            f"{name} has no argument {', '.join(map(repr, unknown))}; its arguments are: "
            f"{', '.join(valid) or 'none'}"
        )

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


def _listed(tool: dict[str, Any]) -> None:
    """One tool of tools/list as sent: reduced schemas, descriptions without docstring
    indentation."""
    if isinstance(tool.get("description"), str):
        tool["description"] = " ".join(tool["description"].split())
    inputs = compact(tool.get("inputSchema") or {"type": "object"})
    inputs.setdefault("additionalProperties", False)
    tool["inputSchema"] = inputs
    if isinstance(tool.get("outputSchema"), dict):
        tool["outputSchema"] = result_shape(tool["outputSchema"])


def _run_resources(ctx: ServerRequestContext[Any, Any]) -> list[dict[str, Any]]:
    """The main artifacts of the runs the caller can see."""
    state: AppState = ctx.lifespan_context
    owner = state.owner(getattr(ctx.request, "headers", None))
    out = []
    for run in state.runs.visible(owner):
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


_VALIDATION = re.compile(r"^Error executing tool (\S+): \d+ validation errors? for \S+Arguments\n")


def _readable_validation_error(result: dict) -> None:
    """Pydantic's dump of bad arguments (counts, model names, type codes, a web link)
    rewritten as one line per argument: `name: what is wrong`."""
    content = result.get("content") or []
    text = content[0].get("text", "") if result.get("isError") and content else ""
    found = _VALIDATION.match(text)
    if not found:
        return
    problems, where = [], ""
    for line in text[found.end() :].splitlines():
        if not line.startswith(" "):
            where = line.strip()
        elif not line.startswith("    "):
            problems.append(f"{where}: {line.strip().split(' [type=')[0]}")
    message = f"{found.group(1)}: invalid argument(s): {'; '.join(problems)}"
    result["content"] = [{"type": "text", "text": message}]
