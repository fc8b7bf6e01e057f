"""Prompt arguments are checked like tool arguments (server/prompting.py): the run or job must
be the caller's, a category must suit the prompt (the analyst the engine gives it) and be one
of the run's, comparative scope needs a comparative run (the orchestrator: a reference
trace). A refusal is an MCP error (INVALID_PARAMS) that says what to pass, never a prompt."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError
from mcp.types import INVALID_PARAMS

from tests.helpers.mcp_client import call
from tests.helpers.prompt_runs import prompt_runs


async def refusal(client: Client, prompt: str, args: dict) -> str:
    with pytest.raises(MCPError) as refused:
        await client.get_prompt(prompt, args)
    assert refused.value.error.code == INVALID_PARAMS
    return refused.value.error.message


async def text(client: Client, prompt: str, args: dict) -> str:
    return (await client.get_prompt(prompt, args)).messages[0].content.text


@pytest.mark.anyio
async def test_prompt_arguments_are_checked_against_the_callers_runs(
    connect, allowed: Path
) -> None:
    """Over HTTP too: a stateless caller names its runs by the keyed ids it was given."""
    with anyio.fail_after(90):
        async with connect() as client:
            runs = await prompt_runs(client, allowed)
            alone, pair = runs["standalone"], runs["comparative"]
            wrong = await refusal(client, "norm", {"run_id": alone, "category": "gemm"})
            system = await refusal(client, "generic-op", {"run_id": alone, "category": "cpu_idle"})
            unknown = await refusal(client, "gemm", {"run_id": "run-000000000000"})
            scope = {"run_id": alone, "comparison_scope": "comparative"}
            not_pair = await refusal(client, "cpu-idle", scope)
            orchestrator = {"trace": "t.json.gz", "comparison_scope": "comparative"}
            no_reference = await refusal(client, "orchestrator", orchestrator)
            no_job = await refusal(client, "job-analysis", {"job_id": "job-000000000000"})
            compared = await text(client, "gemm", {**scope, "run_id": pair})
            await call(client, "prepare_category_data", {"run_id": alone})
            absent = await refusal(client, "norm", {"run_id": alone, "category": "norm_bwd"})
            named = await text(client, "norm", {"run_id": alone, "category": "NORM_fwd"})
    assert wrong == (
        "prompt 'norm' does not analyse category 'gemm': it is the 'gemm' prompt's; start the "
        "'gemm' prompt for it"
    )
    assert "a system category" in system and "'cpu-idle' prompt" in system
    assert "unknown run id 'run-000000000000'" in unknown and "load_trace" in unknown
    assert f"run {alone} compares no traces" in not_pair and "compare_with" in not_pair
    assert "needs reference_trace" in no_reference
    assert "job-000000000000" in no_job and "load_job" in no_job
    assert "## Comparing two traces" in compared  # a comparative run in comparative scope
    assert "'norm_bwd' is not a category of this run" in absent and "norm_fwd" in absent
    assert "category `norm_fwd`" in named  # a display name, rendered as the run's key
