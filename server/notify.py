"""What the server tells a client besides results: log messages and "the run list changed".

Log messages follow the client's choice: `logging/setLevel` on handshake-era connections
(default: warning and above), the per-request `_meta` opt-in on 2026-07-28 ones. The SDK's
own `send_log_message` is deprecated with the 2026 logging change, so the notification is
sent through the session's plain `send_notification`.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from mcp.server.connection import allowed_log_levels
from mcp.server.mcpserver import Context
from mcp.types import LoggingMessageNotification, LoggingMessageNotificationParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LEVEL = "warning"
LOGGER = "rooflens"
log = logging.getLogger(LOGGER)


def _meta(ctx: Context) -> dict:
    meta = ctx.request_context.meta
    if meta is None:
        return {}
    return meta if isinstance(meta, dict) else meta.model_dump(by_alias=True)


def remember_level(levels: dict[int, str], session: Any, level: str) -> None:
    """Record a handshake-era connection's logging/setLevel. A session object lives for one
    request; the connection's initialize parameters live as long as the connection, so they
    key the level (and drop it when the connection goes)."""
    params = session.client_params
    if params is None:
        return
    if id(params) not in levels:
        weakref.finalize(params, levels.pop, id(params), None)
    levels[id(params)] = level


def _wanted(ctx: Context, level: str) -> bool:
    version = ctx.protocol_version or ""
    if version in MODERN_PROTOCOL_VERSIONS:
        return level in allowed_log_levels(version, _meta(ctx))
    levels = ctx.request_context.lifespan_context.log_levels
    chosen = levels.get(id(ctx.session.client_params), DEFAULT_LEVEL)
    return LEVELS.index(level) >= LEVELS.index(chosen)


async def log_to_client(ctx: Context, level: str, message: str) -> None:
    """Log `message` on stderr and, if the client asked for that level, to the client."""
    log.log(logging.WARNING if level in LEVELS[3:] else logging.INFO, message)
    if not _wanted(ctx, level):
        return
    note = LoggingMessageNotification(
        params=LoggingMessageNotificationParams(level=level, data=message, logger=LOGGER)
    )
    await ctx.session.send_notification(note, related_request_id=ctx.request_id)


async def runs_changed(ctx: Context) -> None:
    """A run appeared: resources/list now holds its artifacts."""
    if (ctx.protocol_version or "") in MODERN_PROTOCOL_VERSIONS:
        await ctx.notify_resources_changed()
    else:
        await ctx.session.send_resource_list_changed()
