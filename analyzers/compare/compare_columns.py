"""Trace 1's perf report in comparative form: `unified_perf_summary` gains the tree diff's
comparison columns (trace 2's time and count under each row's lowest common ancestors).

See docs/compare.md#comparative-perf-report. A row reaches its LCAs through its own trace-1
kernels: each kernel under a one-sided subtree has one in `diff_stats`. The standalone report
is left as it is; the comparative sheets are new tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..report.build import PerfReport
from ..report.kernel_stats import group_ids
from ..report.unified_table import GROUP_KEYS, UnifiedTable
from .diff_stats import diff_stats, lca_totals
from .tree_diff import TreeDiff

UNIFIED = "unified_perf_summary"
ANCHOR = "Kernel Time (µs)_sum"  # the comparison columns come right after it
SPEEDUP = "speedup (trace2/trace1)"
DELTA = "delta_us (trace2 - trace1)"
COMPARISON_COLUMNS = [
    SPEEDUP,
    DELTA,
    "lca_count_trace2",
    "lca_id",
    "lca_name",
    "lca_total_kernel_time_trace1_us",
    "lca_total_kernel_time_trace2_us",
]
LCA_SEPARATOR = "; "
DIFF_STATS_SHEET = "diff_stats"


def comparison_sheets(
    report: PerfReport, diff: TreeDiff, stats: pd.DataFrame | None = None
) -> dict[str, pd.DataFrame]:
    """Trace 1's sheets, in order, as new tables; `unified_perf_summary` with the comparison
    columns inserted after `Kernel Time (µs)_sum`. `report` must be built from
    `diff.tree1.model`'s trace (the rows are tied to the diff by GPU event uid); `stats` is
    `diff_stats(diff)` when the caller already has it."""
    stats = diff_stats(diff) if stats is None else stats
    sheets = {name: frame.copy() for name, frame in report.sheets.items()}
    if report.unified is None or UNIFIED not in sheets:
        return sheets  # no operator rows to compare (a GPU-only trace)
    summary = sheets[UNIFIED]
    columns = comparison_columns(report.unified, summary, stats)
    at = summary.columns.get_loc(ANCHOR) + 1
    sheets[UNIFIED] = pd.concat(
        [summary.iloc[:, :at], columns, summary.iloc[:, at:]], axis=1
    ).copy()
    return sheets


def comparison_columns(
    unified: UnifiedTable, summary: pd.DataFrame, stats: pd.DataFrame
) -> pd.DataFrame:
    """The seven comparison columns, one row per summary row (empty where none of the row's
    kernels has an LCA, docs/compare.md#comparative-perf-report)."""
    per_row = _row_lcas(unified, summary, stats).reindex(np.arange(len(summary)))
    t1 = per_row["t1"].to_numpy(dtype=float)
    t2 = per_row["t2"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        speedup = np.where(t1 > 0, t2 / t1, np.nan)
    columns = {
        SPEEDUP: speedup,
        DELTA: t2 - summary[ANCHOR].to_numpy(dtype=float),
        "lca_count_trace2": per_row["count2"].to_numpy(dtype=float),
        "lca_id": per_row["ids"].to_numpy(dtype=object),
        "lca_name": per_row["names"].to_numpy(dtype=object),
        "lca_total_kernel_time_trace1_us": t1,
        "lca_total_kernel_time_trace2_us": t2,
    }
    return pd.DataFrame(columns, index=summary.index)


def row_kernels(unified: UnifiedTable, summary: pd.DataFrame) -> pd.DataFrame:
    """(summary row position, trace-1 GPU uid) of every kernel the row's instances own.

    A summary row is the group of instances whose first one is its `ex_UID`."""
    inst = unified.instances
    attribution = unified.attribution
    if attribution is None or inst.empty:
        return pd.DataFrame({"row": np.array([], int), "gpu": np.array([], int)})
    group = group_ids(inst, GROUP_KEYS)
    first_uid = inst["UID"].groupby(group).transform("first").to_numpy()
    position = pd.Series(np.arange(len(summary)), index=summary["ex_UID"].to_numpy())
    row_of_instance = position.reindex(first_uid).to_numpy()
    kernels = attribution.kernels
    return pd.DataFrame(
        {
            "row": row_of_instance[kernels["op"].to_numpy()],
            "gpu": kernels["gpu"].to_numpy(),
        }
    )


def _row_lcas(unified: UnifiedTable, summary: pd.DataFrame, stats: pd.DataFrame) -> pd.DataFrame:
    """Per summary row with an LCA: its LCA ids and names (`; `-joined, ascending id), trace
    1's and trace 2's kernel time under them (t1, t2), and how many LCAs (count2): the
    trace-2 operator instances that t2 is summed over."""
    one = stats[(stats["source"] == "trace1") & stats["lowest_common_ancestor_id"].notna()]
    lca_of = pd.Series(
        one["lowest_common_ancestor_id"].astype(np.int64).to_numpy(),
        index=one["gpu_op_uid"].to_numpy(),
    )
    pairs = row_kernels(unified, summary)
    pairs = pairs.assign(lca=lca_of.reindex(pairs["gpu"].to_numpy()).to_numpy())
    pairs = pairs.dropna(subset=["lca"]).astype({"lca": np.int64})
    pairs = pairs.drop_duplicates(["row", "lca"]).sort_values(["row", "lca"])
    totals = lca_totals(stats).astype({"lca_id": np.int64}).set_index("lca_id")
    joined = pairs.join(totals, on="lca")
    grouped = joined.groupby("row", sort=True)
    return pd.DataFrame(
        {
            "ids": grouped["lca"].agg(lambda ids: LCA_SEPARATOR.join(map(str, ids))),
            "names": grouped["lca_name"].agg(LCA_SEPARATOR.join),
            "t1": grouped["kernel_time_trace1_us"].sum(),
            "t2": grouped["kernel_time_trace2_us"].sum(),
            "count2": grouped["lca"].size(),
        }
    )
