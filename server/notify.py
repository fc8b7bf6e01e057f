"""What the server tells a client besides results: log messages and "the run list changed".

Log messages follow the client's choice: `logging/setLevel` on handshake-era connections
(default: warning and above), the per-request `_meta` opt-in on 2026-07-28 ones. The SDK's
own `send_log_message` is deprecated with the 2026 logging change, so the notification is
sent through the session's plain `send_notification`.
"""

from __future__ import annotations

import logging

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


def _wanted(ctx: Context, level: str) -> bool:
    version = ctx.protocol_version or ""
    if version in MODERN_PROTOCOL_VERSIONS:
        return level in allowed_log_levels(version, _meta(ctx))
    chosen = ctx.request_context.lifespan_context.log_levels.get(ctx.session, DEFAULT_LEVEL)
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
