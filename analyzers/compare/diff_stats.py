"""The tree diff's tables: `diff_stats` (one row per GPU event of a one-sided subtree) and
its unique-args summary, with TraceLens's column names and our cell conventions.

See docs/compare.md#diff_stats. Argument cells are the trace's JSON text, as in every report
table; times are µs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..report.ops_tables import ARG_COLUMNS
from ..trace.columns import MISSING
from ..trace.intervals import grouped_union_length
from ..trace.model import MODULE_PREFIX, TraceModel
from .tree_diff import TreeDiff

# the launching operator's arguments, in diff_stats's column order
ARGS = ("input_dims", "input_strides", "input_type", "concrete_inputs")
DIFF_STATS_COLUMNS = [
    "name",
    "cpu_op_name",
    "cpu_op_uid",
    "source",
    *(ARG_COLUMNS[column] for column in ARGS),
    "kernel_time",
    "busy_time",
    "lowest_common_ancestor_name",
    "lowest_common_ancestor_id",
    "gpu_op_uid",
    "nn_module_stack",
    "nn_module_parent",
]
SUMMARY_DROPPED = ("kernel_time", "lowest_common_ancestor_id", "gpu_op_uid")
NO_MODULE = "root"  # TraceLens's value when no nn.Module encloses the kernel
SOURCES = {1: "trace1", 2: "trace2"}
MERGED_TREE_FILE = "merged_tree_output.txt"
LCA_TOTALS_COLUMNS = [
    "lca_id",
    "lca_name",
    "kernel_time_trace1_us",
    "kernels_trace1",
    "kernel_time_trace2_us",
    "kernels_trace2",
]


def diff_stats(diff: TreeDiff) -> pd.DataFrame:
    """Every GPU event under a one-sided subtree, with its nearest matched ancestor (LCA);
    `busy_time` is the GPU busy time of all of one side's rows under the same LCA. Ordered by
    LCA, then trace 1 before trace 2, then merged-tree order."""
    parts = [_side_rows(diff, side) for side in SOURCES]
    frame = pd.concat(parts, ignore_index=True)
    lca_order, start = frame.pop("_lca_order").to_numpy(), frame.pop("_start").to_numpy()
    group = pd.MultiIndex.from_arrays([lca_order, frame["source"]]).factorize()[0]
    busy = grouped_union_length(group, start, start + frame["kernel_time"].to_numpy())
    frame["busy_time"] = busy[group] if len(group) else busy
    order = np.lexsort((frame.pop("_node"), frame["source"], lca_order))
    return frame.iloc[order].reset_index(drop=True)[DIFF_STATS_COLUMNS]


def _side_rows(diff: TreeDiff, side: int) -> pd.DataFrame:
    tree = diff.tree1 if side == 1 else diff.tree2
    mine, other = (diff.uid1, diff.uid2) if side == 1 else (diff.uid2, diff.uid1)
    nodes = np.flatnonzero((other == MISSING) & (mine != MISSING))
    nodes = nodes[tree.is_gpu[mine[nodes]]]
    uids = mine[nodes]
    model = tree.model
    lca = diff.lca[nodes]
    launcher = model.launcher[uids]
    events = model.events
    frame = pd.DataFrame(
        {
            "name": model.names[uids].astype(str),
            "cpu_op_name": _names_or_none(model, launcher),
            "cpu_op_uid": pd.array(np.where(launcher == MISSING, None, launcher), dtype="Int64"),
            "source": SOURCES[side],
            **{title: column_at(events[column], launcher) for column, title in ARG_COLUMNS.items()},
            "kernel_time": events["dur"].to_numpy()[uids].astype(float),
            "busy_time": np.nan,
            "lowest_common_ancestor_name": [diff.name(n) if n != MISSING else None for n in lca],
            "lowest_common_ancestor_id": pd.array(np.where(lca == MISSING, None, lca), "Int64"),
            "gpu_op_uid": uids,
            **module_columns(model, uids),
            "_node": nodes,
            "_lca_order": np.where(lca == MISSING, len(diff.uid1), lca),
            "_start": events["ts"].to_numpy()[uids],
        }
    )
    return frame


def _names_or_none(model: TraceModel, uids: np.ndarray) -> list[str | None]:
    names = model.names
    return [str(names[u]) if u != MISSING else None for u in uids.tolist()]


def column_at(column: pd.Series, uids: np.ndarray) -> np.ndarray:
    """The text cell of a categorical `column` at each uid (None at -1 or where the event
    has none), read through the category codes."""
    cells = column.array
    codes = np.where(uids == MISSING, -1, cells.codes[np.maximum(uids, 0)])
    table = np.append(np.asarray(cells.categories, dtype=object), None)
    return table[codes]


def module_columns(model: TraceModel, uids: np.ndarray) -> dict[str, list[str]]:
    """`nn_module_stack` (outermost first, `;`-joined) and `nn_module_parent` (innermost) of
    each GPU event, from the trace's `nn.Module` frames; "root" when none encloses it."""
    chains: list[list[str]] = [[] for _ in range(len(uids))]
    frame = model.module[uids]
    names = model.names
    while np.any(frame != MISSING):
        for row in np.flatnonzero(frame != MISSING).tolist():
            chains[row].append(_module_label(str(names[frame[row]])))
        frame = np.where(frame != MISSING, model.module[np.maximum(frame, 0)], MISSING)
    stack = [";".join(reversed(chain)) if chain else NO_MODULE for chain in chains]
    parent = [chain[0] if chain else NO_MODULE for chain in chains]
    return {"nn_module_stack": stack, "nn_module_parent": parent}


def _module_label(frame_name: str) -> str:
    """`nn.Module: BertModel_0` -> `nn.Module: BertModel` (the instance counter dropped)."""
    head, sep, tail = frame_name.rpartition("_")
    return head if sep and tail.isdigit() and head.startswith(MODULE_PREFIX) else frame_name


def diff_stats_unique_args(stats: pd.DataFrame) -> pd.DataFrame:
    """`diff_stats` rows grouped by every column but the kernel time, LCA id and GPU uid:
    `operation_count`, `kernel_time_mean` and `kernel_time_sum`, largest sum first."""
    keys = [c for c in DIFF_STATS_COLUMNS if c not in SUMMARY_DROPPED]
    grouped = stats.groupby(keys, sort=False, dropna=False, observed=True)["kernel_time"]
    summary = grouped.agg(
        operation_count="count", kernel_time_mean="mean", kernel_time_sum="sum"
    ).reset_index()
    summary = summary.sort_values("kernel_time_sum", ascending=False, kind="stable")
    columns = ["name", "operation_count", *keys[1:], "kernel_time_mean", "kernel_time_sum"]
    return summary[columns].reset_index(drop=True)


def lca_totals(stats: pd.DataFrame) -> pd.DataFrame:
    """Per LCA (rows without one left out): its name, and per trace the kernel time (µs) and
    the number of GPU events under it, the figures a comparison column reads."""
    keyed = stats.dropna(subset=["lowest_common_ancestor_id"])
    if keyed.empty:
        return pd.DataFrame(columns=LCA_TOTALS_COLUMNS)
    keys = ["lowest_common_ancestor_id", "lowest_common_ancestor_name"]
    grouped = keyed.groupby([*keys, "source"], observed=True)["kernel_time"].agg(["sum", "count"])
    wide = grouped.unstack("source", fill_value=0)
    out = pd.DataFrame(index=wide.index)
    for side in SOURCES.values():
        out[f"kernel_time_{side}_us"] = wide["sum"].get(side, 0.0)
        out[f"kernels_{side}"] = wide["count"].get(side, 0)
    out = out.reset_index().rename(columns={keys[0]: "lca_id", keys[1]: "lca_name"})
    return out.astype({"kernels_trace1": int, "kernels_trace2": int})[LCA_TOTALS_COLUMNS]
