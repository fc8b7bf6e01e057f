"""Graph-capture merge on the shared inference traces (perf_report.md §9).

Each replay trace sits beside a `capture_traces/` folder; opened normally, every graph
launch must pair with a capture window and its kernels get the capture-time operators.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.open_trace import open_trace

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

# replay trace -> (graph launches, replayed GPU events, capture batch, mode)
REPLAYS = {
    "sglang_decode/sglang_Qwen3-8B_decode.json.gz": (1, 544, 32, "FULL"),
    "vllm_decode_full/graph_execution.json.gz": (1, 421, 32, "FULL"),
    "vllm_prefilldecode_piecewise/graph_execution.json.gz": (25, 361, 8192, "PIECEWISE"),
    "xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz": (4, 6264, 1, "FULL"),
}


def replay(shared: Path, name: str) -> Path:
    return shared / "traces/inference" / name


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_every_graph_launch_of_the_shared_replays_is_merged(shared, name):
    launches, gpu_events, batch, mode = REPLAYS[name]
    health = assess(open_trace(replay(shared, name)))
    merge = health.capture_merge
    assert merge is not None and merge.problems == []
    assert (merge.graph_launches, merge.merged_graph_launches) == (launches, launches)
    assert merge.merged_gpu_events == gpu_events
    (capture,) = merge.captures
    assert (capture.batch_size, capture.mode, capture.classified_by) == (
        batch,
        mode,
        "execution_details.json",
    )
    assert "graph_capture_merged" in {w.code for w in health.warnings}


def test_sglang_decode_gemms_get_their_capture_shapes(shared):
    """Qwen3-8B decode at batch 32: the MLP gate/up GEMM, 36 layers, from the capture."""
    model = open_trace(replay(shared, "sglang_decode/sglang_Qwen3-8B_decode.json.gz"))
    summary = build_report(model, get_platform("MI300X")).unified.summary
    mm = summary[summary["name"] == "aten::mm"].set_index("Input Dims")
    row = mm.loc["[[32,4096],[4096,24576]]"]
    assert row["operation_count"] == 36
    assert row["GFLOPS"] == pytest.approx(2 * 32 * 4096 * 24576 / 1e9)
    moved = (32 * 4096 + 4096 * 24576 + 32 * 24576) * 2 / 2**20  # bf16 A, B, C in MiB
    assert row["Data Moved (MB)"] == pytest.approx(moved)
    assert json.loads(row["Input type"]) == ["c10::BFloat16", "c10::BFloat16"]


def test_the_merge_lifts_roofline_coverage_of_the_xdit_replay(shared):
    path = replay(shared, "xdit_flux.1_aiter_sage/profile_trace_rank_0.json.gz")
    mi300x = get_platform("MI300X")
    without = roofline_coverage(build_report(open_trace(path, captures=None), mi300x))
    with_captures = roofline_coverage(build_report(open_trace(path), mi300x))
    assert without < 0.20  # measured 14.7 %: the graph kernels have no operator
    assert with_captures > 0.90  # measured 92.9 % before the attention models
