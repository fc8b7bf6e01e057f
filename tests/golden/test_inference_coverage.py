"""Roofline coverage of the shared inference traces whose ops got models from their shapes.

Each case names the ops that were uncovered before (benchmarks/roofline_coverage.py, MI300X):
every instance of them now has a Pct Roofline, and the trace's coverage reaches the floor.
Coverage before the inference models: sglang prefill-decode 90.3 %, vLLM decode capture
86.0 %, vLLM piecewise capture 11.2 %, xDiT SD 3.5 99.5 %.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

CASES = {
    "inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz": (
        0.99,
        ("aiter::mha_batch_prefill", "aiter::rmsnorm", "aiter::add_rmsnorm"),
    ),
    "inference/vllm_decode_full/capture_traces/"
    "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz": (0.99, ("aten::index",)),
    "inference/vllm_prefilldecode_piecewise/capture_traces/"
    "graph_capture_rank_0.1773709679453551615.pt.trace.json.gz": (
        0.99,
        (
            "_C_cache_ops::reshape_and_cache_flash",
            "vllm::unified_attention_with_output",
            "aten::index",
        ),
    ),
    "inference/xdit_sd_3.5/profile_trace_rank_0.json.gz": (0.999, ("aiter::_groupnorm_run",)),
}


@pytest.mark.parametrize("trace", sorted(CASES), ids=lambda t: t.split("/")[1])
def test_inference_ops_have_a_roofline(shared: Path, trace: str) -> None:
    floor, ops = CASES[trace]
    report = build_report(
        build_model(load_trace(shared / "traces" / trace)), get_platform("MI300X")
    )
    assert report.unified is not None
    inst = report.unified.instances
    for op in ops:
        pct = inst.loc[inst["name"] == op, "Pct Roofline"].to_numpy(dtype=float)
        assert len(pct) and np.isfinite(pct).all(), op
    coverage = roofline_coverage(report)
    assert coverage is not None and coverage >= floor
