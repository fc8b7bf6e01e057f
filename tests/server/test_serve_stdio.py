"""`rooflens serve` over a real stdio subprocess: the tools are listed and callable."""

from __future__ import annotations

import sys

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.slow  # servers started as processes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_stdio_server_lists_tools_and_answers_a_call(tmp_path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rooflens.cli.main", "serve", "--allow-dir", str(tmp_path)],
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


@pytest.mark.anyio
async def test_a_job_over_stdio_keeps_the_protocol_clean(tmp_path) -> None:
    """load_job starts worker processes from a stdio server: they inherit its stdout, which
    is the protocol channel, so nothing they do may write there."""
    from rooflens.analyzers.synthetic.job import JobPlan, write_job

    write_job(tmp_path / "job", JobPlan(ranks=2, steps=1, collectives=2, slow_rank=1, slow_us=50))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rooflens.cli.main", "serve", "--allow-dir", str(tmp_path)],
    )
    async with Client(params) as client:
        result = await client.call_tool("load_job", {"paths": ["job"], "workers": 1})
        assert not result.is_error, result.content
        assert result.structured_content["overview"]["straggler"]["rank"] == 1
        listed = await client.call_tool("list_platforms", {})  # the channel still works
        assert not listed.is_error
