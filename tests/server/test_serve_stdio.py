"""`rooflens serve` over a real stdio subprocess: the tools are listed and callable."""

from __future__ import annotations

import sys

import pytest
from mcp import Client, StdioServerParameters


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_stdio_server_lists_tools_and_answers_a_call(tmp_path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rooflens.server.cli", "serve", "--allow-dir", str(tmp_path)],
    )
    async with Client(params) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"load_trace", "run_full_analysis", "compose_report"} <= names
        result = await client.call_tool("list_platforms", {})
        assert not result.is_error
        assert "MI300X" in result.content[0].text
        refused = await client.call_tool("inspect_trace", {"path": "/etc/passwd"})
        assert refused.is_error
        assert str(tmp_path.resolve()) in refused.content[0].text
