"""`build_server(config)`: the rooflens MCP server; tests and the CLI each build their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server import MCPServer

import rooflens
from rooflens import resources

from . import prompting, tools
from .middleware import ServerMiddleware
from .run_access import ServerRunAccess
from .state import AppState, ServerConfig

__all__ = ["INSTRUCTIONS", "ServerConfig", "build_server"]

INSTRUCTIONS = """\
rooflens analyses PyTorch profiler traces against a GPU roofline. Code computes every number;
you write the judgement. Steps: inspect_trace (optional) -> load_trace(path) returns a run_id
-> prepare_category_data(run_id) -> run_category_analysis(run_id, category) for each
analysable category, system ones first -> draft_findings -> submit_findings (optional, your
prose) -> aggregate_findings -> compose_report(run_id, executive_summary=...) ->
validate_report. run_full_analysis(path) does every step without prose. query_operations
pages through the operations (or any table list_tables names). load_trace(path,
compare_with=reference) compares two traces: every later tool works on that run in
comparative scope. load_job(paths) analyses the ranks of a distributed job (each rank gets a
run_id); get_job_overview(job_id) gives its straggler and findings again. The `orchestrator`
prompt drives the whole workflow. Paths must lie inside the allowed directories.
"""


def build_server(config: ServerConfig) -> MCPServer:
    state = AppState.build(config)

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[AppState]:
        yield state

    middleware = ServerMiddleware(config.max_result_bytes)
    mcp = MCPServer(
        "rooflens",
        title="rooflens",
        description="Where GPU time goes in PyTorch profiler traces, against the roofline",
        version=rooflens.__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        middleware=[middleware],
    )
    middleware.server = mcp
    tools.register(mcp)
    prompting.register(mcp)
    resources.register(mcp, ServerRunAccess())
    return mcp
