"""The "what changed" section on the six synthetic comparative pairs
(`traces/comparative_units/`, MI300X trace 1 against H100 trace 2): its headline names the
difference each case was built for (cases.csv), and the lists hold the case's planted
operators, kernels and times (read off the two trace files)."""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.compare.tree_diff import diff_traces
from rooflens.analyzers.compare.what_changed import OnlyIn, WhatChanged, what_changed
from rooflens.analyzers.compare.what_changed_md import headline, what_changed_markdown
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.golden import COMPARATIVE_UNIT_CASES, shared_dir

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

UNITS = "traces/comparative_units"
CASES = COMPARATIVE_UNIT_CASES


@cache
def section(case: str) -> WhatChanged:
    """The section of a pair; the reports need no platform (the section reads kernel times)."""
    shared = shared_dir()
    assert shared is not None
    folder = shared / UNITS / case
    model1 = build_model(load_trace(folder / "trace1.json"))
    model2 = build_model(load_trace(folder / "trace2.json"))
    report1, report2 = build_report(model1, None), build_report(model2, None)
    return what_changed(diff_traces(model1, model2), report1, report2)


def test_the_six_cases(shared: Path) -> None:
    with (shared / UNITS / "cases.csv").open() as handle:
        assert [row[0] for row in csv.reader(handle)] == CASES


def test_moe_fused_in_trace_2(shared: Path) -> None:
    found = section(CASES[0])
    top = found.top
    assert top is not None and top.operator == "moe_layer"
    assert (top.time1_us, top.time2_us) == (1160.0, 800.0)  # 120 + 480 + 480 + 80 -> 800
    change = found.kernel_change_of("moe_layer")
    assert change is not None
    assert len(change.kernels1) == 4 and len(change.kernels2) == 1
    assert change.families2 == ("Triton",) and "CK" in change.families1
    assert headline(found).startswith("`moe_layer` is faster in trace 2: 1,160.0 → 800.0 µs")
    assert "`moe_layer` moved from other + CK to Triton (4 → 1 distinct kernels)." in headline(
        found
    )
    assert {o.name for o in found.operators_only if o.trace == 1} == {
        "aiter::moe_sorting_fwd",
        "aiter::ck_moe_stage1",
        "aiter::ck_moe_stage2",
        "aiter::moe_sum",
    }
    assert found.operators_only[0] == OnlyIn("triton::fused_moe_kernel", 2, 1, 800.0)
    # the fused layer also takes an fp8 weight and one more argument
    assert [c.operator for c in found.shape_changes] == ["moe_layer"]
    assert "float8_e4m3fnuz" in (found.shape_changes[0].types2 or "")


def test_attention_unfused_on_both(shared: Path) -> None:
    found = section(CASES[1])
    assert found.operators_only == ()  # the same three operators on both sides
    bmm, softmax = found.improvements
    assert found.top == bmm and found.regressions == ()
    assert (bmm.operator, bmm.count, bmm.time1_us, bmm.time2_us) == ("aten::bmm", 2, 180.0, 80.0)
    assert (softmax.operator, softmax.time1_us, softmax.time2_us) == ("aten::softmax", 110.0, 40.0)
    # softmax keeps its kernel name on both vendors; the GEMMs do not
    assert {c.operator for c in found.kernel_changes} == {"aten::bmm"}
    assert headline(found).endswith(
        "`aten::bmm` runs other cuBLAS kernels (1 → 1 distinct kernels)."
    )


def test_attention_fused_in_trace_1(shared: Path) -> None:
    found = section(CASES[2])
    assert found.improvements == ()
    top = found.top
    assert top is not None and top == found.regressions[0]
    assert (top.operator, top.time1_us, top.time2_us) == ("attention", 350.0, 780.0)
    change = found.kernel_change_of("attention")
    assert change is not None
    assert change.families1 == ("FlashAttention",) and len(change.kernels2) == 3
    assert {(o.name, o.trace) for o in found.operators_only} == {
        ("aiter::_flash_attn_forward", 1),
        ("aten::bmm", 2),
        ("aten::softmax", 2),
    }


def test_mm_against_linear(shared: Path) -> None:
    found = section(CASES[3])
    top = found.top
    assert top is not None and top.operator == "aten::mm | aten::addmm"
    assert (top.time1_us, top.time2_us) == (730.0, 480.0)  # transpose 80 + GEMM 650 -> 480
    assert found.operators_only == (
        OnlyIn("aten::mm", 1, 1, 730.0),
        OnlyIn("aten::addmm", 2, 1, 480.0),
    )
    (change,) = found.kernel_changes
    assert change.families1 == ("other", "Tensile") and change.families2 == ("cuBLAS",)


def test_identical_runtime(shared: Path) -> None:
    found = section(CASES[4])
    assert found.regressions == () and found.improvements == () and found.top is None
    assert headline(found).startswith("No shared operator's time changed by more than 5%")
    (change,) = found.kernel_changes
    assert (change.operator, change.time1_us, change.time2_us) == ("aten::mm", 200.0, 200.0)
    assert change.families1 == ("Tensile",) and change.families2 == ("cuBLAS",)
    assert "`aten::mm` moved from Tensile to cuBLAS (1 → 1 distinct kernels)." in headline(found)


def test_convolution_gap(shared: Path) -> None:
    found = section(CASES[5])
    top = found.top
    assert top is not None and top.operator == "aten::convolution"
    assert (top.time1_us, top.time2_us) == (2000.0, 40.0)
    assert top.ratio == pytest.approx(0.02)
    change = found.kernel_change_of("aten::convolution")
    assert change is not None and change.library_changed
    assert (change.families1, change.families2) == (("MIOpen",), ("cuDNN",))
    text = what_changed_markdown(found)
    assert text.startswith("## What changed\n\n`aten::convolution` is faster in trace 2")
    assert "`aten::convolution` moved from MIOpen to cuDNN" in text


BERT = "gaunernst_bert-small-uncased__1016001"


def lca_totals_of(shared: Path, lca: str) -> tuple[float, float]:
    """TraceLens's trace-1 and trace-2 LCA totals of the bert pair's row whose LCAs are all
    `lca` (reference/tracelens_compare/, trace-1 unified_perf_summary)."""
    folder = shared / f"reference/tracelens_compare/mi300_vs_h100_{BERT}/perf_report_trace1_csvs"
    table = pd.read_csv(folder / "unified_perf_summary.csv")
    names = table["lca_name"].fillna("").str.split("; ")
    (row,) = table[[set(n) == {lca} for n in names]].itertuples(index=False)
    return row.lca_total_kernel_time_trace1_us, row.lca_total_kernel_time_trace2_us


def test_bert_across_vendors(shared: Path) -> None:
    """A real pair: the same operators on both GPUs; attention is the largest change, its
    kernel moves from AOTriton to FlashAttention, and the unit times are TraceLens's LCA
    totals (within 0.5 %)."""
    model1 = build_model(load_trace(shared / f"traces/mi300/{BERT}.json.gz"))
    model2 = build_model(load_trace(shared / f"traces/h100/{BERT}.json.gz"))
    report1, report2 = build_report(model1, None), build_report(model2, None)
    found = what_changed(diff_traces(model1, model2), report1, report2)
    assert found.operators_only == ()
    top = found.top
    assert top is not None and top.operator == "aten::_flash_attention_forward"
    assert top.count == 4 and top.call_site.endswith("modeling_bert.py(364): forward")
    t1, t2 = lca_totals_of(shared, "aten::_flash_attention_forward")
    assert top.time1_us == pytest.approx(t1, rel=5e-3)
    assert top.time2_us == pytest.approx(t2, rel=5e-3)
    change = found.kernel_change_of(top.operator)
    assert change is not None and (change.families1, change.families2) == (
        ("AOTriton",),
        ("FlashAttention",),
    )
    (norm,) = [c for c in found.improvements if c.operator == "aten::native_layer_norm"]
    t1, t2 = lca_totals_of(shared, "aten::native_layer_norm")
    assert (norm.time1_us, norm.time2_us) == (
        pytest.approx(t1, rel=5e-3),
        pytest.approx(t2, rel=5e-3),
    )
