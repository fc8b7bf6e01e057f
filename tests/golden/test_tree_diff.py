"""The tree diff against TraceLens's TraceDiff outputs (reference/tracelens_compare/).

`tracediff_test/` was made without Python frames (TraceDiff's defaults) from the timesformer
pair: the merged tree must be line for line the same, and diff_stats row for row. The model
pairs' `diff_stats` were made with Python frames in the tree; without them we must find the
same rows, the same LCA operator per kernel, and the same time and count per LCA.
"""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rooflens.analyzers.compare.diff_stats import diff_stats, diff_stats_unique_args, lca_totals
from rooflens.analyzers.compare.merged_text import merged_tree_text
from rooflens.analyzers.compare.tree_diff import TreeDiff, diff_traces
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.golden import COMPARATIVE_UNIT_CASES, shared_dir, when_shared

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

TIMESFORMER = "facebook_timesformer-base-finetuned-k400__1016002"
PAIRS = [
    TIMESFORMER,
    "gaunernst_bert-small-uncased__1016001",
    "Falconsai_nsfw_image_detection__1016002",
    "Qwen_Qwen1.5-0.5B-Chat__1016005",
    "google_owlv2-large-patch14-ensemble__1016001",
]
UNIT_CASES = COMPARATIVE_UNIT_CASES
COMPARE = "reference/tracelens_compare"
TIME_TOLERANCE = 5e-3  # the 0.5 % per LCA


@cache
def pair_diff(model: str) -> TreeDiff:
    """The tree diff of one model's MI300X (trace 1) and H100 (trace 2) traces, loaded once."""
    shared = shared_dir()
    assert shared is not None
    one, two = (
        build_model(load_trace(shared / f"traces/{gpu}/{model}.json.gz"))
        for gpu in ("mi300", "h100")
    )
    return diff_traces(one, two)


@cache
def our_stats(model: str) -> pd.DataFrame:
    return diff_stats(pair_diff(model))


def reference_stats(shared: Path, model: str) -> pd.DataFrame:
    return pd.read_csv(
        shared / COMPARE / f"mi300_vs_h100_{model}/perf_report_trace1_csvs/diff_stats.csv.gz"
    )


def as_lists(value: object) -> object:
    """A Python repr's tuples as lists, the shape JSON gives."""
    if isinstance(value, list | tuple):
        return [as_lists(item) for item in value]
    return value


def test_merged_tree_is_tracelens_line_for_line(shared: Path) -> None:
    expected = (shared / COMPARE / "tracediff_test/merged_tree_output.txt").read_text("utf-8")
    assert merged_tree_text(pair_diff(TIMESFORMER)) == expected


def test_tracediff_reference_rows(shared: Path) -> None:
    ours = our_stats(TIMESFORMER)
    ref = pd.read_csv(shared / COMPARE / "tracediff_test/diff_stats.csv")
    assert len(ours) == len(ref) == 983
    for column in ("name", "cpu_op_name", "cpu_op_uid", "source", "gpu_op_uid"):
        assert ours[column].tolist() == ref[column].tolist(), column
    # LCA ids are merged-tree pre-order positions: the same tree gives the same ids
    assert ours["lowest_common_ancestor_id"].tolist() == ref["lowest_common_ancestor_id"].tolist()
    assert (
        ours["lowest_common_ancestor_name"].tolist() == ref["lowest_common_ancestor_name"].tolist()
    )
    np.testing.assert_allclose(ours["kernel_time"], ref["kernel_time"], atol=1e-3)
    np.testing.assert_allclose(ours["busy_time"], ref["busy_time"], atol=1e-3)
    for column in ("Input Dims", "Input Strides", "Input type", "Concrete Inputs"):
        # our cells are JSON text, TraceLens's Python reprs (docs/deviations.md)
        mine = [json.loads(cell) for cell in ours[column]]
        theirs = [as_lists(ast.literal_eval(cell)) for cell in ref[column]]
        assert mine == theirs, column
    totals = ours.groupby("source")["kernel_time"].sum()
    assert totals.round(3).to_dict() == {"trace1": 119852.883, "trace2": 158433.174}


def test_tracediff_reference_unique_args(shared: Path) -> None:
    ours = diff_stats_unique_args(our_stats(TIMESFORMER))
    ref = pd.read_csv(shared / COMPARE / "tracediff_test/diff_stats_unique_args_summary.csv")
    assert len(ours) == len(ref) == 981
    key = ["name", "cpu_op_uid", "source"]
    merged = ours.merge(ref, on=key, suffixes=("", "_ref"), validate="one_to_one")
    assert len(merged) == len(ref)
    assert (merged["operation_count"] == merged["operation_count_ref"]).all()
    np.testing.assert_allclose(merged["kernel_time_sum"], merged["kernel_time_sum_ref"], atol=1e-3)
    np.testing.assert_allclose(
        merged["kernel_time_mean"], merged["kernel_time_mean_ref"], atol=1e-3
    )
    assert ours["kernel_time_sum"].is_monotonic_decreasing


def per_lca(stats: pd.DataFrame) -> pd.DataFrame:
    grouped = stats.groupby(["source", "lowest_common_ancestor_name"])["kernel_time"]
    return grouped.agg(["sum", "count"])


@pytest.mark.parametrize("model", when_shared(PAIRS))
def test_model_pair_rows_and_lca_times(shared: Path, model: str) -> None:
    ours, ref = our_stats(model), reference_stats(shared, model)
    assert len(ours) == len(ref)
    mine = ours.set_index(["source", "gpu_op_uid"]).sort_index()
    theirs = ref.set_index(["source", "gpu_op_uid"]).sort_index()
    assert mine.index.equals(theirs.index)
    for column in ("name", "cpu_op_name", "lowest_common_ancestor_name"):
        assert mine[column].tolist() == theirs[column].tolist(), column
    np.testing.assert_allclose(mine["busy_time"], theirs["busy_time"], atol=2e-3)
    a, b = per_lca(ours), per_lca(ref)
    assert a.index.equals(b.index)
    assert (a["count"] == b["count"]).all()
    np.testing.assert_allclose(a["sum"], b["sum"], rtol=TIME_TOLERANCE)


def lca_groups(stats: pd.DataFrame) -> set[frozenset[tuple[str, int]]]:
    """The kernels (source, uid) under each LCA, whatever number the LCA has."""
    keys = zip(stats["source"], stats["gpu_op_uid"].astype(int), strict=True)
    groups: dict[int, set[tuple[str, int]]] = {}
    for lca, key in zip(stats["lowest_common_ancestor_id"].astype(int), keys, strict=True):
        groups.setdefault(lca, set()).add(key)
    return {frozenset(group) for group in groups.values()}


@pytest.mark.parametrize("model", when_shared(PAIRS))
def test_model_pair_lca_instances(shared: Path, model: str) -> None:
    """Each LCA instance holds the same kernels as TraceLens's. Its ids count the Python-frame
    nodes of its tree and ours do not (docs/deviations.md), so only the grouping is compared."""
    ours, ref = our_stats(model), reference_stats(shared, model)
    assert lca_groups(ours) == lca_groups(ref)
    # and they come in TraceLens's order: ours -> theirs is one-to-one and increasing
    assert_same_order(ours, ref)


def assert_same_order(ours: pd.DataFrame, ref: pd.DataFrame) -> np.ndarray:
    """Check our LCA ids map one-to-one and increasingly onto TraceLens's; the id offsets."""
    key = ["source", "gpu_op_uid"]
    mine = ours.set_index(key)["lowest_common_ancestor_id"].astype(int)
    theirs = ref.set_index(key)["lowest_common_ancestor_id"].astype(int)
    pairs = pd.DataFrame({"ours": mine, "ref": theirs.reindex(mine.index)}).drop_duplicates()
    pairs = pairs.sort_values("ours")
    assert pairs["ours"].is_unique and pairs["ref"].is_unique
    assert pairs["ref"].is_monotonic_increasing
    return (pairs["ref"] - pairs["ours"]).unique()


# TraceLens's id minus ours with Python frames kept: the frames above the model differ
FRAME_OFFSETS = {
    TIMESFORMER: -5,
    "gaunernst_bert-small-uncased__1016001": -5,
    "Falconsai_nsfw_image_detection__1016002": -7,
}


@pytest.mark.parametrize("model", when_shared(list(FRAME_OFFSETS)))
def test_python_frames_find_tracelens_lcas(shared: Path, model: str) -> None:
    """With frames kept, every kernel gets TraceLens's LCA name, and the ids differ by one
    constant (docs/deviations.md#lca-ids-count-operators-only)."""
    diff = pair_diff(model)
    ours = diff_stats(diff_traces(diff.tree1.model, diff.tree2.model, python_frames=True))
    ref = reference_stats(shared, model)
    key = ["source", "gpu_op_uid"]
    mine, theirs = ours.set_index(key).sort_index(), ref.set_index(key).sort_index()
    assert mine.index.equals(theirs.index)
    names = "lowest_common_ancestor_name"
    assert mine[names].tolist() == theirs[names].tolist()
    assert assert_same_order(ours, ref).tolist() == [FRAME_OFFSETS[model]]


@pytest.mark.parametrize("model", when_shared(PAIRS))
def test_module_columns_come_from_the_trace(shared: Path, model: str) -> None:
    """TraceLens ran the model pairs with Python frames, so its module columns are real
    there; `tracediff_test` (no frames) says `root` everywhere (docs/deviations.md)."""
    ours = our_stats(model).set_index(["source", "gpu_op_uid"]).sort_index()
    ref = reference_stats(shared, model).set_index(["source", "gpu_op_uid"]).sort_index()
    for column in ("nn_module_stack", "nn_module_parent"):
        assert ours[column].tolist() == ref[column].tolist(), column
    if model == TIMESFORMER:
        plain = pd.read_csv(shared / COMPARE / "tracediff_test/diff_stats.csv")
        assert set(plain["nn_module_parent"]) == {"root"}
        assert (ours["nn_module_parent"] != "root").any()


@pytest.mark.parametrize("case", when_shared(UNIT_CASES))
def test_synthetic_pairs_row_for_row(shared: Path, case: str) -> None:
    """The six small comparative pairs: every column but the Python-frame ones, ids included
    (their trees are small enough that TraceLens's frames do not shift the numbering)."""
    folder = shared / "traces/comparative_units" / case
    one, two = (build_model(load_trace(folder / f"trace{n}.json")) for n in (1, 2))
    ours = diff_stats(diff_traces(one, two))
    ref = pd.read_csv(shared / COMPARE / f"unit_{case}/perf_report_trace1_csvs/diff_stats.csv")
    assert len(ours) == len(ref)
    for column in ("name", "cpu_op_name", "source", "gpu_op_uid", "lowest_common_ancestor_name"):
        assert ours[column].tolist() == ref[column].tolist(), column
    assert ours["lowest_common_ancestor_id"].tolist() == ref["lowest_common_ancestor_id"].tolist()
    np.testing.assert_allclose(ours["kernel_time"], ref["kernel_time"], atol=1e-3)
    np.testing.assert_allclose(ours["busy_time"], ref["busy_time"], atol=1e-3)


@pytest.mark.parametrize("case", when_shared(UNIT_CASES))
def test_synthetic_pairs_lca_totals(shared: Path, case: str) -> None:
    """Per LCA, trace 1's and trace 2's kernel time are the `lca_total_kernel_time_trace*_us`
    TraceLens writes into trace 1's unified_perf_summary (summed over a row's `;`-joined
    LCAs when its instances have several)."""
    folder = shared / "traces/comparative_units" / case
    one, two = (build_model(load_trace(folder / f"trace{n}.json")) for n in (1, 2))
    totals = lca_totals(diff_stats(diff_traces(one, two))).set_index("lca_id")
    unified = pd.read_csv(
        shared / COMPARE / f"unit_{case}/perf_report_trace1_csvs/unified_perf_summary.csv"
    )
    with_lca = unified.dropna(subset=["lca_id"])
    assert len(with_lca)  # every synthetic pair differs somewhere
    for lcas, t1, t2 in zip(
        with_lca["lca_id"].astype(str),
        with_lca["lca_total_kernel_time_trace1_us"],
        with_lca["lca_total_kernel_time_trace2_us"],
        strict=True,
    ):
        ids = [int(float(part)) for part in lcas.split(";")]
        assert totals.loc[ids, "kernel_time_trace1_us"].sum() == pytest.approx(t1, abs=1e-3)
        assert totals.loc[ids, "kernel_time_trace2_us"].sum() == pytest.approx(t2, abs=1e-3)


def test_a_trace_against_itself_differs_nowhere(shared: Path) -> None:
    model = build_model(load_trace(shared / "traces/b200/eager_trace.json.gz"))
    diff = diff_traces(model, model)
    assert diff.matched.all() and len(diff.uid1) > 1000
    assert (diff.uid1 == diff.uid2).all()
    assert diff_stats(diff).empty
