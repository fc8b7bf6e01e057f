"""A CUPTI range-profiler trace over MCP (`counters_only`, tests/truth/test_counters_only.py):
`inspect_trace` and `load_trace` describe it (per-kernel hardware counters, no timeline, with
the FLOP totals its counters give) instead of calling it empty, and a full analysis is refused
with that description before any run folder is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.situations import SITUATIONS

DESCRIPTION = "per-kernel hardware counters, no timeline: 18 kernels"


def _counters(folder: Path) -> Path:
    return SITUATIONS["counters_only"].write(folder / "counters_only.json.gz")


def _described(warnings: list[dict]) -> str:
    codes = [w["code"] for w in warnings]
    assert "no_gpu_events" not in codes
    return next(w["message"] for w in warnings if w["code"] == "counters_only")


@pytest.mark.anyio
async def test_inspect_and_load_describe_the_counters(connect, allowed: Path) -> None:
    trace = _counters(allowed)
    async with connect() as client:
        inspected = await client.call_tool("inspect_trace", {"path": str(trace)})
        assert not inspected.is_error
        health = inspected.structured_content["health"]
        assert health["counters"]["flops"]["fp32"] == 26_252_951_552
        assert DESCRIPTION in _described(health["warnings"])
        loaded = await client.call_tool("load_trace", {"path": str(trace)})
        assert not loaded.is_error  # the host side's perf report is still there
        message = _described(loaded.structured_content["health_warnings"])
        assert DESCRIPTION in message and "27.327 GFLOP" in message


@pytest.mark.anyio
async def test_the_full_analysis_refuses_with_the_description(connect, allowed: Path) -> None:
    trace = _counters(allowed)
    async with connect() as client:
        refused = await client.call_tool("run_full_analysis", {"path": str(trace)})
    assert refused.is_error
    text = refused.content[0].text
    assert f"cannot be analysed: the trace holds {DESCRIPTION}" in text
    assert "no GPU events" not in text and "Traceback" not in text
    assert not any(allowed.rglob("run.json"))
