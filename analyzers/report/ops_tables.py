"""The launcher tables: `ops_summary_by_category`, `ops_summary`, `ops_unique_args`.

See docs/report-tables.md#rule-a-launchers.

Column names are TraceLens's, byte for byte, so existing consumers keep working. Times are
GPU busy time of each launcher's kernels, in µs unless the column says ms.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .kernel_stats import group_ids, kernel_summaries, truncate
from .launchers import Launchers

ARG_COLUMNS = {
    "input_dims": "Input Dims",
    "input_type": "Input type",
    "input_strides": "Input Strides",
    "concrete_inputs": "Concrete Inputs",
}
UNIQUE_ARGS_KEYS = [
    "name",
    "op category",
    "process_name",
    "process_label",
    "thread_name",
    *ARG_COLUMNS.values(),
    "num_kernels",
]
STATS = ("mean", "median", "std", "min", "max", "sum")


def with_shares(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """Add `Percentage (%)` and `Cumulative Percentage (%)` of `column` (already sorted)."""
    total = frame[column].sum()
    share = frame[column] / total * 100 if total else frame[column] * 0.0
    cumulative = share.cumsum().clip(upper=100.0)  # float sums may pass 100 by 1e-14
    return frame.assign(**{"Percentage (%)": share, "Cumulative Percentage (%)": cumulative})


def ops_summary_by_category(launchers: Launchers) -> pd.DataFrame:
    inst = launchers.instances
    table = (
        inst.groupby("op category", sort=False)
        .agg(
            Count=("name", "size"), total_direct_kernel_time_ms=("total_direct_kernel_time", "sum")
        )
        .reset_index()
    )
    table["total_direct_kernel_time_ms"] /= 1000.0
    table = table.sort_values("total_direct_kernel_time_ms", ascending=False, kind="stable")
    return with_shares(table.reset_index(drop=True), "total_direct_kernel_time_ms")


def ops_summary(launchers: Launchers) -> pd.DataFrame:
    inst = launchers.instances
    grouped = inst.groupby("name", sort=False)
    table = grouped.agg(
        total_direct_kernel_time_sum=("total_direct_kernel_time", "sum"),
        total_subtree_kernel_time_sum=("total_subtree_kernel_time", "sum"),
        Count=("ts", "size"),
    ).reset_index()
    table.insert(3, "total_direct_kernel_time_ms", table["total_direct_kernel_time_sum"] / 1e3)
    table.insert(4, "total_subtree_kernel_time_ms", table["total_subtree_kernel_time_sum"] / 1e3)
    categories = grouped["op category"].agg(lambda c: sorted(set(c)))
    table["Categories"] = table["name"].map(categories)
    table = table.sort_values("total_direct_kernel_time_sum", ascending=False, kind="stable")
    return with_shares(table.reset_index(drop=True), "total_direct_kernel_time_sum")


def ops_unique_args(launchers: Launchers) -> pd.DataFrame:
    inst = launchers.instances.rename(columns=ARG_COLUMNS)
    inst = inst.assign(ex_UID=inst.index.to_numpy(), group=group_ids(inst, UNIQUE_ARGS_KEYS))
    grouped = inst.groupby("group", sort=True)
    table = grouped[UNIQUE_ARGS_KEYS].first()
    table["operation_count"] = grouped.size()
    for stat in STATS:
        for kind in ("direct", "subtree"):
            column = f"total_{kind}_kernel_time"
            table[f"{column}_{stat}"] = grouped[column].agg(stat)
    table["ex_UID"] = grouped["ex_UID"].first()

    kernels = launchers.kernels
    group_of = pd.Series(inst["group"].to_numpy(), index=inst.index)
    summaries = kernel_summaries(
        pd.DataFrame(
            {
                "group": group_of.reindex(kernels["launcher"]).to_numpy(),
                "instance": kernels["launcher"].to_numpy(),
                "ts": kernels["ts"].to_numpy(),
                "name": kernels["name"].astype(str).to_numpy(),
                "stream": kernels["stream"].to_numpy(),
                "dur": kernels["dur"].to_numpy(),
            }
        )
    )
    table["kernel_details_summary"] = [summaries.get(int(g), []) for g in table.index]
    table["trunc_kernel_details"] = table["kernel_details_summary"].map(truncate)
    table = table.sort_values(
        ["total_direct_kernel_time_sum", "ex_UID"], ascending=[False, True], kind="stable"
    )
    table = table.reset_index(drop=True)
    table["num_kernels"] = table["num_kernels"].astype(np.int64)
    return with_shares(table, "total_direct_kernel_time_sum")
