"""Prompts over MCP: fifteen, typed arguments, rendered; every tool a prompt names exists."""

from __future__ import annotations

import pytest
from mcp import Client

from rooflens.prompts import get_prompt, render
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.prompt_runs import arguments, prompt_runs
from tests.helpers.tool_names import CALLED, NOT_TOOLS, TOOLISH


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["auto", "legacy"])
def mode(request) -> str:
    return request.param


@pytest.mark.anyio
async def test_fifteen_prompts_with_typed_arguments_render(tmp_path, mode) -> None:
    server = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    async with Client(server, mode=mode) as client:
        listed = (await client.list_prompts()).prompts
        assert len(listed) == 15
        by_name = {p.name: p for p in listed}
        assert {a.name for a in by_name["gemm"].arguments} >= {"run_id", "comparison_scope"}
        assert all(p.description for p in listed)
        run_id = (await prompt_runs(client, tmp_path))["standalone"]
        result = await client.get_prompt("gemm", {"run_id": run_id})
        text = result.messages[0].content.text
        assert run_id in text and "{run_id}" not in text


@pytest.mark.anyio
async def test_every_tool_a_prompt_names_exists_on_the_server(tmp_path) -> None:
    """A backticked tool-like name or a `call X` in any prompt must be a real server tool."""
    server = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    async with Client(server) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        listed = (await client.list_prompts()).prompts
        runs = await prompt_runs(client, tmp_path)
        named: set[str] = set()
        for prompt in listed:
            args = arguments(prompt, "standalone", runs)
            if "job_id" in args:  # a job takes a cluster: the function the server calls
                text = render(get_prompt(prompt.name), **args)
            else:
                text = (await client.get_prompt(prompt.name, args)).messages[0].content.text
            named |= (set(TOOLISH.findall(text)) | set(CALLED.findall(text))) - NOT_TOOLS
        assert len(named) >= 10
        assert named <= tools, sorted(named - tools)
