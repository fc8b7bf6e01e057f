"""Trace 1's comparative unified_perf_summary against TraceLens's (reference/tracelens_compare/).

Rows are matched on (name, Input Dims, Input type, Concrete Inputs), as the standalone golden
test matches them, with the same kernel time and instance count: on every pair each of
TraceLens's rows finds its row here. The comparison columns must agree within 0.5 %, in
TraceLens's place. The LCA ids number the Python-frame nodes of TraceLens's trees
(docs/deviations.md#lca-ids-count-operators-only): they are compared through the tree diff
with frames, where they differ from TraceLens's by one constant.
"""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rooflens.analyzers.compare.compare_columns import (
    ANCHOR,
    COMPARISON_COLUMNS,
    comparison_sheets,
)
from rooflens.analyzers.compare.tree_diff import TreeDiff, diff_traces
from rooflens.analyzers.report.build import PerfReport, build_report
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import TraceModel, build_model
from tests.helpers.comparison_files import write_comparison_csvs
from tests.helpers.golden import (
    COMPARE,
    PAIRS,
    close,
    pair_paths,
    platform_for,
    shared_dir,
    when_shared,
)

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared


def unit_folders() -> list[str]:
    """The six synthetic pairs' reference folders (`unit_<case>`)."""
    shared = shared_dir()
    return sorted(p.name for p in (shared / COMPARE).glob("unit_*")) if shared else []


KEY = ["name", "Input Dims", "Input type", "Concrete Inputs"]
NUMBERS = [c for c in COMPARISON_COLUMNS if c not in ("lca_id", "lca_name")]
# TraceLens's LCA id minus ours, with Python frames kept in both trees (test_tree_diff.py)
FRAME_OFFSETS = {PAIRS[0]: -5, PAIRS[1]: -7, PAIRS[2]: -5}


@cache
def models(folder: str) -> tuple[TraceModel, TraceModel]:
    one, two, _ = pair_paths(folder)
    return build_model(load_trace(one)), build_model(load_trace(two))


@cache
def trace1_report(folder: str) -> PerfReport:
    """Trace 1's report on MI300X, the platform TraceLens's trace-1 run used (README)."""
    shared = shared_dir()
    assert shared is not None
    return build_report(models(folder)[0], platform_for(shared, "mi300"))


@cache
def pair_diff(folder: str, python_frames: bool = False) -> TreeDiff:
    return diff_traces(*models(folder), python_frames=python_frames)


def ours(folder: str, python_frames: bool = False) -> pd.DataFrame:
    sheets = comparison_sheets(trace1_report(folder), pair_diff(folder, python_frames))
    return sheets["unified_perf_summary"]


def reference(folder: str) -> pd.DataFrame:
    return pd.read_csv(pair_paths(folder)[2] / "unified_perf_summary.csv")


def _freeze(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


def keyed_rows(frame: pd.DataFrame, parse) -> dict[tuple, list[dict[str, Any]]]:
    """Rows per match key (several rows share one across threads), by kernel time."""
    out: dict[tuple, list[dict[str, Any]]] = {}
    for row in frame.to_dict("records"):
        key = (row["name"], *(_freeze(parse(row[c])) for c in KEY[1:]))
        out.setdefault(key, []).append(row)
    for rows in out.values():
        rows.sort(key=lambda r: -r[ANCHOR])
    return out


def ours_cell(text: Any) -> Any:
    return json.loads(text) if isinstance(text, str) else ()


def ref_cell(text: Any) -> Any:
    return ast.literal_eval(text) if isinstance(text, str) and text else ()


def matched_rows(mine: pd.DataFrame, ref: pd.DataFrame) -> list[tuple[dict, dict]]:
    """(our row, TraceLens's row) for every key whose standalone figures agree."""
    a, b = keyed_rows(mine, ours_cell), keyed_rows(ref, ref_cell)
    pairs = []
    for key, theirs in b.items():
        rows = a.get(key, [])
        if len(rows) != len(theirs):
            continue
        same = all(
            close(r[ANCHOR], t[ANCHOR]) and r["operation_count"] == t["operation_count"]
            for r, t in zip(rows, theirs, strict=True)
        )
        if same:
            pairs += list(zip(rows, theirs, strict=True))
    return pairs


def number(value: Any) -> float:
    return float(value) if value is not None and value == value else float("nan")


def assert_columns_agree(folder: str) -> None:
    """Every row of TraceLens's has its row here, whose comparison numbers and LCA names
    agree."""
    mine, ref = ours(folder), reference(folder)
    for frame in (mine, ref):  # right after the kernel time sum, in TraceLens's order
        at = list(frame.columns).index(ANCHOR) + 1
        assert list(frame.columns)[at : at + len(COMPARISON_COLUMNS)] == COMPARISON_COLUMNS
    pairs = matched_rows(mine, ref)
    assert len(pairs) == len(ref)
    for row, theirs in pairs:
        for column in NUMBERS:
            a, b = number(row[column]), number(theirs[column])
            both_empty = a != a and b != b
            assert both_empty or close(a, b, 5e-3) or abs(a - b) < 5e-3, (row["name"], column)
        assert str(row["lca_name"]) == str(theirs["lca_name"]), row["name"]
        count = len(str(theirs["lca_id"]).split(";"))
        assert len(str(row["lca_id"]).split(";")) == count, row["name"]


@pytest.mark.parametrize("model", when_shared(PAIRS))
def test_model_pairs_comparison_columns(shared: Path, model: str) -> None:
    assert_columns_agree(f"mi300_vs_h100_{model}")


@pytest.mark.parametrize("folder", when_shared(unit_folders()))
def test_synthetic_pairs_comparison_columns(shared: Path, folder: str) -> None:
    """Every row of the six small pairs, LCA ids included (frames do not shift them there)."""
    assert len(unit_folders()) == 6
    assert_columns_agree(folder)
    mine, ref = ours(folder), reference(folder)
    assert mine["lca_id"].astype(str).tolist() == ref["lca_id"].astype(str).tolist()


@pytest.mark.parametrize("model", when_shared(list(FRAME_OFFSETS)))
def test_lca_ids_with_python_frames(shared: Path, model: str) -> None:
    """With frames in both trees, each row's LCA ids are TraceLens's shifted by the pair's
    constant (docs/deviations.md#lca-ids-count-operators-only)."""
    folder = f"mi300_vs_h100_{model}"
    pairs = matched_rows(ours(folder, python_frames=True), reference(folder))
    assert pairs
    for row, theirs in pairs:
        mine = [int(i) + FRAME_OFFSETS[model] for i in str(row["lca_id"]).split(";")]
        assert mine == [int(i) for i in str(theirs["lca_id"]).split(";")], row["name"]


def test_standalone_report_untouched_and_folder_written(shared: Path, tmp_path: Path) -> None:
    """The writer adds diff_stats.csv to trace 1's sheets; the standalone report keeps its
    columns."""
    folder = "unit_test01_moe_fused_vs_unfused"
    report = trace1_report(folder)
    before = list(report.sheets["unified_perf_summary"].columns)
    written = write_comparison_csvs(report, pair_diff(folder), tmp_path)
    assert list(report.sheets["unified_perf_summary"].columns) == before
    assert COMPARISON_COLUMNS[0] not in before
    names = {p.name for p in written}
    assert names == {f"{sheet}.csv" for sheet in report.sheets} | {"diff_stats.csv"}
    diff_rows = pd.read_csv(tmp_path / "diff_stats.csv")
    ref_rows = pd.read_csv(pair_paths(folder)[2] / "diff_stats.csv")
    assert diff_rows["gpu_op_uid"].tolist() == ref_rows["gpu_op_uid"].tolist()
    written_unified = pd.read_csv(tmp_path / "unified_perf_summary.csv")
    # the four trace-1 MoE ops share one LCA, `moe_layer`: 800 us of fused kernel on trace 2
    assert written_unified["lca_total_kernel_time_trace2_us"].tolist() == [800.0] * 4
    assert written_unified["lca_name"].tolist() == ["moe_layer"] * 4
