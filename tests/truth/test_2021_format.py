"""A 2021-format trace with convolutions (analyzers/synthetic/cases.py): operators have
shapes and dtypes but no `Concrete Inputs`, categories are spelled `Operator`/`Kernel`/
`Runtime`, and launches link by correlation id (no flow events).

Planted answer: each convolution really has stride 2 and padding 1, which the trace does not
say. Modelled with the defaults (stride 1, no padding) it would count 110² / 56² = 3.86 times
its FLOPs; so the convolution row is unmodelled with the stride/padding reason, and no
estimate, quantified or heuristic, reaches the impact scale from it. The classifier GEMM,
whose FLOPs need only its shapes, is still modelled.
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.pipeline.steps import RunResults
from rooflens.analyzers.synthetic.cases import (
    ASSUMED_FLOPS_RATIO,
    CONV_LAYERS,
    FC_IN,
    FC_OUT,
    FC_TOKENS,
    write_2021_conv_trace,
)
from tests.helpers.trace_runs import run_trace

REASON = "convolution stride/padding/dilation not recorded (no Concrete Inputs)"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunResults:
    trace = write_2021_conv_trace(tmp_path_factory.mktemp("old") / "t.json.gz")
    return run_trace(trace, "MI300X")


def test_the_planted_geometry_would_overcount() -> None:
    assert pytest.approx(110**2 / 56**2) == ASSUMED_FLOPS_RATIO


def test_the_old_trace_links_and_the_convolution_is_unmodelled(run: RunResults) -> None:
    summary = run.report.sheets["unified_perf_summary"].set_index("name")
    conv = summary.loc["aten::convolution"]
    assert conv["op category"] == "CONV_fwd"
    assert conv["operation_count"] == CONV_LAYERS  # three calls, linked without flows
    assert conv["Kernel Time (µs)_sum"] > 0
    assert not conv["has_perf_model"]
    assert conv["unmodelled_reason"] == REASON
    assert np.isnan(float(conv["GFLOPS"])) and np.isnan(float(conv["Pct Roofline_mean"]))
    gemm = summary.loc["aten::addmm"]
    assert gemm["has_perf_model"] and not isinstance(gemm["unmodelled_reason"], str)
    # addmm: 2·M·K·N for the product plus M·N for the bias
    flops = 2 * FC_TOKENS * FC_IN * FC_OUT + FC_TOKENS * FC_OUT
    assert gemm["GFLOPS"] == pytest.approx(flops / 1e9)
    assert 0 < gemm["Pct Roofline_mean"] <= 110


def test_no_estimate_from_the_convolution(run: RunResults) -> None:
    conv = run.metrics["conv_fwd"]
    assert isinstance(conv, CategoryMetrics)
    found = [m for m in run.metrics.values() if isinstance(m, CategoryMetrics)]
    ops = {op.name: op for m in found for op in m.operations or ()}
    assert ops["aten::convolution"].unmodelled_reason == REASON
    assert ops["aten::convolution"].efficiency.efficiency_percent is None
    # TraceLens's heuristic guess stays in the metrics; it never becomes a saving below
    assert [f.estimate_method for f in conv.category_findings or ()] == ["heuristic"]
    assert run.priorities is not None
    conv_items = [i for i in run.priorities.items if "aten::convolution" in i.title]
    assert conv_items, "the convolution is listed, unquantified"
    for item in conv_items:
        assert item.saving is None and item.unquantified_reason == REASON
    assert f"| not quantifiable: {REASON} |" in run.report_text
    top = run.report_text.split("- **Top fixes**:", 1)[-1].split("\n\n", 1)[0]
    assert "aten::convolution" not in top


def test_trace_health_says_the_values_are_missing(run: RunResults) -> None:
    seen = run.report_text.split("## What this analysis could and could not see\n", 1)[1]
    seen = seen.split("\n## ", 1)[0]
    assert "- ⚠️ `no_concrete_inputs`: Operator scalar arguments (Concrete Inputs)" in seen
    assert "`no_shapes`" not in seen  # the shapes are there
    assert "- `aten::convolution` (`conv_fwd`, " in seen and f"ms): {REASON}." in seen
