"""The comparison columns on two generated traces of the same model: trace 2 runs the forward
GELU on another kernel in half the time, everything else is the same run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.compare.compare_columns import (
    ANCHOR,
    COMPARISON_COLUMNS,
    comparison_sheets,
)
from rooflens.analyzers.compare.tree_diff import diff_traces
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.synthetic.sample import GELU, write_sample_trace
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.compare_pairs import FAST_GELU, planted_pair
from tests.helpers.comparison_files import write_comparison_csvs
from tests.helpers.trace_builder import TraceBuilder


def test_planted_faster_kernel(tmp_path: Path) -> None:
    one, two, gelu = planted_pair(tmp_path)
    assert len(gelu) == 2  # one forward GELU per layer
    model1, model2 = build_model(load_trace(one)), build_model(load_trace(two))
    report = build_report(model1, None)
    standalone = report.sheets["unified_perf_summary"].copy()
    diff = diff_traces(model1, model2)
    sheets = comparison_sheets(report, diff)
    table = sheets["unified_perf_summary"]
    pd.testing.assert_frame_equal(report.sheets["unified_perf_summary"], standalone)
    assert list(sheets) == list(report.sheets)
    for name, frame in report.sheets.items():  # only unified_perf_summary gains columns
        if name != "unified_perf_summary":
            pd.testing.assert_frame_equal(sheets[name], frame)
            assert sheets[name] is not frame

    at = list(table.columns).index(ANCHOR) + 1
    assert list(table.columns)[at : at + len(COMPARISON_COLUMNS)] == COMPARISON_COLUMNS
    assert list(table.drop(columns=COMPARISON_COLUMNS).columns) == list(standalone.columns)
    row = table.set_index("name").loc["aten::gelu"]
    t1 = sum(gelu)
    assert row[ANCHOR] == pytest.approx(t1)
    # each instance's GELU kernel is one-sided; its LCA is the shared aten::gelu operator
    assert row["lca_name"] == "aten::gelu; aten::gelu"
    assert row["lca_count_trace2"] == 2
    assert row["lca_total_kernel_time_trace1_us"] == pytest.approx(t1)
    assert row["lca_total_kernel_time_trace2_us"] == pytest.approx(t1 / 2)
    assert row["speedup (trace2/trace1)"] == pytest.approx(0.5)
    assert row["delta_us (trace2 - trace1)"] == pytest.approx(-t1 / 2)
    ids = [int(i) for i in row["lca_id"].split("; ")]
    assert ids == sorted(ids) and all(diff.name(i) == "aten::gelu" for i in ids)
    # every other row's kernels found their counterpart: nothing to compare there
    others = table[table["name"] != "aten::gelu"]
    assert len(others) > 5
    assert others["lca_id"].isna().all()
    assert all(math.isnan(v) for v in others["speedup (trace2/trace1)"])


def test_written_folder(tmp_path: Path) -> None:
    one, two, gelu = planted_pair(tmp_path)
    model1, model2 = build_model(load_trace(one)), build_model(load_trace(two))
    report = build_report(model1, None)
    out = tmp_path / "perf_report_trace1_csvs"
    written = write_comparison_csvs(report, diff_traces(model1, model2), out)
    assert {p.name for p in written} == {f"{s}.csv" for s in report.sheets} | {"diff_stats.csv"}
    stats = pd.read_csv(out / "diff_stats.csv")
    assert stats.groupby("source")["name"].agg(set).to_dict() == {
        "trace1": {GELU},
        "trace2": {FAST_GELU},
    }
    unified = pd.read_csv(out / "unified_perf_summary.csv").set_index("name")
    assert unified.loc["aten::gelu", "lca_total_kernel_time_trace2_us"] == pytest.approx(
        sum(gelu) / 2
    )


def test_gpu_only_trace_has_nothing_to_extend(tb: TraceBuilder) -> None:
    """Without operators there is no unified_perf_summary: the sheets come back as copies."""
    model = tb.model([tb.kernel("k_a", 0, 10), tb.kernel("k_b", 20, 5)])
    report = build_report(model, None)
    assert "unified_perf_summary" not in report.sheets
    sheets = comparison_sheets(report, diff_traces(model, model))
    assert list(sheets) == list(report.sheets)
    for name, frame in report.sheets.items():
        pd.testing.assert_frame_equal(sheets[name], frame)


def test_a_trace_against_itself_has_no_lca(tmp_path: Path) -> None:
    """Every kernel finds itself: the columns are there, and empty on every row."""
    model = build_model(load_trace(write_sample_trace(tmp_path / "sample.json.gz")))
    table = comparison_sheets(build_report(model, None), diff_traces(model, model))
    unified = table["unified_perf_summary"]
    assert len(unified) > 5
    assert unified[COMPARISON_COLUMNS].isna().all().all()
