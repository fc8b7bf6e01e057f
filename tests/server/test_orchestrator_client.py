"""A scripted client that follows the orchestrator prompt, and the analyst prompts it starts,
literally, on the generator's sample trace: the calls a model makes when it does exactly what
the prompts say. No argument is refused, every result fits the size limit, the model's
summary reaches the report, and the whole analysis takes at most 40 tool calls.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rooflens.server.state import DEFAULT_MAX_RESULT_BYTES
from tests.helpers.compare_pairs import planted_pair
from tests.helpers.mcp_client import whole_report
from tests.helpers.recorder import Recorder

SYSTEM = ("multi_kernel", "kernel_fusion")
CALL_GOAL = 40
SUMMARY = (
    "Most GPU time goes to matrix multiplies, which already run near the roofline; the "
    "elementwise kernels and the exposed all-reduce are the next opportunities."
)
RECOMMENDATION = "Overlap the all-reduce with the backward pass before tuning kernels."


async def analyst(
    model: Recorder, prompt: str, run_id: str, category: str, scope: str = "standalone"
) -> None:
    """The three-call recipe every analyst prompt gives."""
    if prompt in ("multi-kernel", "kernel-fusion", "cpu-idle"):  # one category each
        text = await model.prompt(prompt, run_id=run_id, comparison_scope=scope)
    else:
        text = await model.prompt(prompt, run_id=run_id, category=category, comparison_scope=scope)
    assert "`run_category_analysis`" in text and "`submit_findings`" in text
    assert ("## Comparing two traces" in text) == (scope == "comparative")
    await model.tool("run_category_analysis", run_id=run_id, category=category)
    draft = await model.tool("draft_findings", run_id=run_id, category=category)
    if not draft["items"]:
        note = "Nothing in this category reaches the server's threshold."
        await model.tool(
            "submit_findings", run_id=run_id, category=category, status="nothing_to_report",
            note=note,
        )  # fmt: skip
        return
    items = []
    for item in draft["items"]:
        prose = {
            "rank": item["rank"],
            "title": item["title"],
            "insight": f"{item['insight']} This is where the group loses time.",
            "action": item["action"],
            "identification": "The operations and kernels listed in the data table.",
            "reasoning": "The measured time is above what the roofline allows for this work.",
            "resolution": "Profile again after the change and compare this group's time.",
        }
        if item.get("confidence"):
            prose["confidence_reason"] = "The module's kernels form one dependent chain."
        items.append(prose)
    await model.tool(
        "submit_findings", run_id=run_id, category=category, status="findings", items=items
    )


def prompt_for(category: str) -> str:
    table = {"gemm": "gemm", "elementwise": "elementwise", "norm_fwd": "norm", "sdpa_fwd": "sdpa"}
    return table.get(category, "generic-op")


async def orchestrate(model: Recorder, trace: Path, reference: Path | None = None) -> str:
    """Steps 1-11 of the orchestrator prompt, in order; with a reference trace, in
    comparative scope (both traces inspected, one run loaded with compare_with)."""
    scope = "standalone" if reference is None else "comparative"
    given = {} if reference is None else {"reference_trace": str(reference), "platform2": "H100"}
    text = await model.prompt("orchestrator", trace=str(trace), comparison_scope=scope, **given)
    assert "`list_platforms`" in text and "`compose_report`" in text
    await model.tool("list_platforms")
    inspected = await model.tool("inspect_trace", path=str(trace))
    platform = inspected["health"]["gpu"]["suggested_platform"]
    compare = {}
    if reference is not None:
        assert "`compare_with`" in text and "`platform2`" in text
        await model.tool("inspect_trace", path=str(reference))
        compare = {"compare_with": str(reference), "platform2": "H100"}
    loaded = await model.tool("load_trace", path=str(trace), platform=platform, **compare)
    run_id = loaded["run_id"]
    assert (loaded["comparison"] is None) == (reference is None)
    prepared = await model.tool("prepare_category_data", run_id=run_id)
    assert prepared["comparison_scope"] == scope  # what the analysts are told
    listed = {c["name"]: c for c in prepared["categories"]}
    for key, prompt in zip(SYSTEM, ("multi-kernel", "kernel-fusion"), strict=True):
        if key in listed:
            await analyst(model, prompt, run_id, key, scope)
    if prepared["gpu_idle_percent"] > 15:
        await analyst(model, "cpu-idle", run_id, "cpu_idle", scope)
    for key, entry in listed.items():
        if entry["analysable"] and entry["tier"] == "compute_kernel":
            await analyst(model, prompt_for(key), run_id, key, scope)
    aggregated = await model.tool("aggregate_findings", run_id=run_id)
    await model.tool("validate_run", run_id=run_id)
    await model.prompt("model-identification", run_id=run_id, comparison_scope=scope)
    identity = await model.tool("get_model_identification_data", run_id=run_id)
    info = {
        "model": "Cannot be inferred from trace",
        "architecture": "decoder-only transformer" if identity["operations"] else "unknown",
        "scale": "Cannot be inferred from trace",
        "precision": "BF16",
    }
    await model.tool("submit_model_info", run_id=run_id, info=info)
    await model.tool("render_performance_plot", run_id=run_id, title=f"Sample step on {platform}")
    plot = Path(loaded["output_dir"]) / "perf_improvement.png"
    drawn = plot.read_bytes()
    assert aggregated["priorities"]
    composed = await model.tool(
        "compose_report", run_id=run_id, executive_summary=SUMMARY, recommendation=RECOMMENDATION
    )
    assert composed["valid"], composed["problems"]
    assert plot.read_bytes() == drawn  # compose_report kept the model's plot and title
    return await whole_report(model.client, f"rooflens://runs/{run_id}/report")


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_orchestrator_prompt_followed_literally(connect, sample: Path) -> None:
    with anyio.fail_after(120):
        async with connect() as client:
            model = Recorder(client)
            report = await orchestrate(model, sample)
    assert SUMMARY in report and f"**Recommendation**: {RECOMMENDATION}" in report
    assert "![Performance breakdown](perf_improvement.png)" in report
    assert model.largest <= DEFAULT_MAX_RESULT_BYTES
    assert len(model.tool_calls) <= CALL_GOAL, model.tool_calls
    # measured: 31 tool calls, 1 resource read, 9 prompts on the sample trace
    print(
        f"\norchestrator: {len(model.tool_calls)} tool calls, {len(model.reads)} reads, "
        f"{len(model.prompts)} prompts; largest result {model.largest} bytes"
    )


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_orchestrator_prompt_followed_literally_on_a_pair(connect, allowed) -> None:
    """The comparative workflow on the generated pair (trace 2's forward GELU runs on another
    kernel in half the time) ends in a comparative report that validates and names it."""
    one, two, durations = planted_pair(allowed)
    with anyio.fail_after(180):
        async with connect() as client:
            model = Recorder(client)
            report = await orchestrate(model, one, two)
    assert report.startswith("# ") and "Comparative Analysis: `MI300X` vs `H100_SXM`" in report
    assert "| Metric | Trace 1 (`MI300X`) | Trace 2 (`H100_SXM`) | Difference (T1 − T2) |" in report
    gelu = sum(durations)
    assert f"`aten::gelu` is faster in trace 2: {gelu:,.1f} → {gelu / 2:,.1f} µs" in report
    # the comparative elementwise finding is the planted GELU: twice as slow in trace 1
    card = f"1 operation ({gelu / 1000:.3f} ms in trace 1 against {gelu / 2000:.3f} ms in trace 2)"
    assert f"**Insight**: {card} is 100.0 % slower in trace 1." in report
    assert SUMMARY in report
    assert model.largest <= DEFAULT_MAX_RESULT_BYTES
    assert len(model.tool_calls) <= CALL_GOAL + 1, model.tool_calls  # + trace 2's inspection
