"""Category rows of a GPU-only trace: one row per kernel name
(docs/analysis.md#gpu-only-categories).

A trace without operator events has no unified table; its computation kernels are grouped by
name, categorised by the `[[kernel_names]]` rules of the category table, and carry the same
time columns as operator rows: kernel time, and the share of the timeline's computation time
(prepare/computation_time.py). No perf model applies: the rows have no FLOPs or bytes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..perf.categories import CategoryTable
from ..trace.model import TraceModel
from .computation_time import COLUMN, NOT_SCORED, kernel_shares

NOTE = (
    "The trace has no operator events: compute categories come from kernel names "
    "(one row per kernel name, no perf model)."
)


def kernel_rows(model: TraceModel, table: CategoryTable) -> pd.DataFrame:
    """One row per computation kernel name, largest kernel time first (empty without any)."""
    gpu = model.gpu
    scored = (
        gpu["linked"].to_numpy()
        & (gpu["bucket"].to_numpy() == "computation")
        & (gpu["cat"].astype(str).to_numpy() != NOT_SCORED)
    )
    if not scored.any():
        return pd.DataFrame()
    use = gpu[scored]
    frame = pd.DataFrame(
        {
            "name": use["name"].astype(str).to_numpy(),
            "uid": use.index.to_numpy(),
            "dur": np.nan_to_num(use["dur"].to_numpy(dtype=np.float64)),
            "held": kernel_shares(gpu)[scored].to_numpy(),
        }
    )
    g = frame.groupby("name", sort=False)
    rows = pd.DataFrame(
        {
            "ex_UID": g["uid"].first(),
            "operation_count": g.size(),
            "Kernel Time (µs)_sum": g["dur"].sum(),
            "Kernel Time (µs)_mean": g["dur"].mean(),
            COLUMN: g["held"].sum(),
        }
    ).reset_index()
    rows.insert(1, "op category", [table.kernel_category(n) for n in rows["name"]])
    # no host side: the CPU duration is the kernel time, so no row reads as sync-bound
    rows["total_duration_us"] = rows["Kernel Time (µs)_sum"]
    rows["has_perf_model"] = False
    order = np.lexsort((rows["ex_UID"].to_numpy(), -rows["Kernel Time (µs)_sum"].to_numpy()))
    return rows.iloc[order].reset_index(drop=True)
