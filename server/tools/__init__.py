"""The MCP tools, one module per workflow step; `register` adds them all."""

from __future__ import annotations

from mcp.server import MCPServer

from . import categories, findings, full, gate, job, load, query, report, what_if


def register(mcp: MCPServer) -> None:
    for module in (load, categories, findings, report, query, full, job, what_if, gate):
        module.register(mcp)
