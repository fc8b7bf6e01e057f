"""Arguments that every prompt accepts on a server: prompts check their run, scope and
category like tools do (server/prompting.py), so a test that renders prompts over MCP loads a
run of the sample trace and a comparative run of it against a copy first."""

from __future__ import annotations

import shutil
from pathlib import Path

from mcp import Client

from rooflens.analyzers.synthetic.sample import write_sample_trace
from tests.helpers.mcp_client import call

# a category key each analyst prompt analyses (analyzers/prepare/categories.py `skill_for`)
CATEGORY_OF = {
    "gemm": "gemm", "sdpa": "sdpa_fwd", "elementwise": "elementwise", "reduce": "reduce",
    "triton": "triton", "norm": "norm_fwd", "convolution": "conv_fwd", "moe": "moe_fused",
    "generic-op": "other",
}  # fmt: skip


async def prompt_runs(client: Client, folder: Path) -> dict[str, str]:
    """scope -> a run id of that scope, loaded (not prepared) on `client`'s server."""
    trace = write_sample_trace(folder / "prompt_sample.json.gz")
    copy = shutil.copy(trace, folder / "prompt_reference.json.gz")
    alone = await call(client, "load_trace", {"path": str(trace), "fresh": True})
    pair = await call(
        client, "load_trace", {"path": str(trace), "compare_with": str(copy), "fresh": True}
    )
    return {"standalone": alone["run_id"], "comparative": pair["run_id"]}


def arguments(prompt, scope: str, runs: dict[str, str], job_id: str | None = None) -> dict:
    """The arguments of `prompt` (a listed Prompt) in `scope`, each one it requires given."""
    names = {a.name for a in prompt.arguments}
    given = {"comparison_scope": scope}
    if "run_id" in names:
        given["run_id"] = runs[scope]
    if "category" in names:
        given["category"] = CATEGORY_OF[prompt.name]
    if "trace" in names:
        given["trace"] = "trace.json.gz"
        if scope == "comparative":
            given["reference_trace"] = "reference.json.gz"
    if "job_id" in names:
        given["job_id"] = job_id or "job-0123456789ab"
    return given
