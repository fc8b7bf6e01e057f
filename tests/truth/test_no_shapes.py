"""A trace recorded without shapes (analyzers/synthetic/cases.py): the sample training
step with no `Input Dims`, `Input type`, `Input Strides` or `Concrete Inputs` on any operator.

Planted answer: no operator can be sized, so none is modelled. Every row that has a perf model
says "input shapes not recorded"; no row has GFLOPS, bytes or a roofline; the kernel time
with a roofline is 0 %; and no item of the impact scale carries a saving from a compute
category, quantified or heuristic: each compute finding is "not quantifiable" with the reason,
ranked after the measured (system) items, in no total, plot bar or top fix.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.findings.composing.coverage import coverage
from rooflens.analyzers.findings.composing.plot import read_savings
from rooflens.analyzers.perf.base import SHAPES_NOT_RECORDED
from rooflens.analyzers.pipeline.steps import RunResults
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.synthetic.cases import write_no_shapes_trace
from tests.helpers.trace_runs import run_trace

# the sample step's operators that have a perf model (synthetic/sample.py's _record_step)
MODELLED_IN_THE_SAMPLE = {
    "aten::mm", "aten::addmm", "aten::mul", "aten::gelu", "aten::gelu_backward", "aten::add",
    "aten::layer_norm", "aten::_scaled_dot_product_flash_attention", "aten::copy_",
}  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> RunResults:
    trace = write_no_shapes_trace(tmp_path_factory.mktemp("noshapes") / "t.json.gz")
    return run_trace(trace, "MI300X")


def test_no_row_is_modelled_and_each_says_why(run: RunResults) -> None:
    summary = run.report.sheets["unified_perf_summary"]
    assert set(summary["name"]) == MODELLED_IN_THE_SAMPLE
    assert not summary["has_perf_model"].any()
    assert (summary["unmodelled_reason"] == SHAPES_NOT_RECORDED).all()
    for column in ("GFLOPS", "Data Moved (MB)", "Pct Roofline_mean"):
        assert np.isnan(summary[column].to_numpy(dtype=float)).all(), column
    assert roofline_coverage(run.report) == 0.0


def test_category_operations_carry_the_reason_and_coverage_is_zero(run: RunResults) -> None:
    ops = [
        op
        for m in run.metrics.values()
        if isinstance(m, CategoryMetrics)
        for op in m.operations or ()
    ]
    assert {op.name for op in ops} == MODELLED_IN_THE_SAMPLE - {"aten::copy_"}  # a copy only
    assert all(op.unmodelled_reason == SHAPES_NOT_RECORDED for op in ops)
    assert all(op.efficiency.efficiency_percent is None for op in ops)
    rows = coverage(run.metrics)
    assert rows and all(r.modelled_ms == 0.0 and r.kernel_ms > 0 for r in rows)
    seen = run.report_text.split("## What this analysis could and could not see\n", 1)[1]
    assert "**Roofline coverage.** 0.0 % of the compute categories' kernel time" in seen
    assert re.search(rf"- `aten::mm` \(`gemm`, [\d.]+ ms\): {SHAPES_NOT_RECORDED}\.", seen)


def test_no_compute_item_has_a_saving(run: RunResults) -> None:
    assert run.priorities is not None
    items = run.priorities.items
    compute = [i for i in items if i.kind == "compute"]
    assert compute, "the unmodelled compute findings are still listed"
    # ranked by the kernel time they cover: the GEMMs (the sample's largest ops) first
    titles = [i.title.split(" (")[0] for i in compute[:2]]  # names are code spans
    assert titles == ["`GEMM`: `aten::mm`", "`GEMM`: `aten::addmm`"]
    for item in compute:
        assert item.estimate_method == "unquantified"
        assert item.saving is None and item.percent_mid is None
        assert item.unquantified_reason == SHAPES_NOT_RECORDED
    # every quantified item ranks first, and none comes from a compute category
    quantified = [i for i in items if i.saving is not None]
    assert items[: len(quantified)] == quantified
    assert {i.kind for i in quantified} <= {"system", "kernel_fusion"}
    totals = run.priorities.saving_totals
    assert totals is not None and totals.by_pool_mid_ms["kernels"] == 0.0
    assert all(b.kind != "compute" for b in read_savings(run.priorities))


def test_the_report_says_not_quantifiable(run: RunResults) -> None:
    text = run.report_text
    table = text.split("## Priorities\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| P") and "| compute |" in ln]
    assert rows and all(f"not quantifiable: {SHAPES_NOT_RECORDED} |" in ln for ln in rows)
    summary = text.split("## Executive Summary\n", 1)[1].split("\n## ", 1)[0]
    fixes = summary.split("- **Top fixes**:", 1)[1] if "**Top fixes**" in summary else ""
    assert "not quantifiable" not in fixes and "(no roofline" not in fixes
    assert "**Impact**: not quantifiable: input shapes not recorded" in text


def test_trace_health_names_the_missing_shapes_once(run: RunResults) -> None:
    seen = run.report_text.split("## What this analysis could and could not see\n", 1)[1]
    seen = seen.split("\n## ", 1)[0]
    assert "- ⚠️ `no_shapes`: Operator input shapes were not recorded" in seen
    assert "`no_concrete_inputs`" not in seen  # implied by the missing shapes
