"""`build_server(config)`: the rooflens MCP server; tests and the CLI each build their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from mcp.server import MCPServer

from rooflens import resources
from rooflens.server import tools, tools_model
from rooflens.server.paths import PathPolicy
from rooflens.server.runs import AppState, RunStore

INSTRUCTIONS = """\
rooflens analyses PyTorch profiler traces against a GPU roofline.
Workflow: list_platforms (optional) -> inspect_trace (optional) -> load_trace(path, platform)
-> prepare_category_data(run_id) -> run_category_analysis(run_id, category) for each analysable
category (system ones first) -> draft_findings(run_id, category) -> submit_findings (optional,
to rewrite the prose) -> aggregate_findings(run_id) -> validate_run -> compose_report(run_id)
-> validate_report(run_id). run_full_analysis(path) does the deterministic steps in one call.
query_operations pages through the run's operations. Files are read and written only inside
the allowed directories.
"""


@dataclass
class ServerConfig:
    allowed_dirs: list[Path]


def build_server(config: ServerConfig) -> MCPServer:
    policy = PathPolicy(config.allowed_dirs)

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncIterator[AppState]:
        yield AppState(policy=policy, runs=RunStore(policy))

    mcp = MCPServer("rooflens", instructions=INSTRUCTIONS, lifespan=lifespan)
    tools.register(mcp)
    tools_model.register(mcp)
    tools_model.register_prompts(mcp)
    resources.register(mcp)
    return mcp
