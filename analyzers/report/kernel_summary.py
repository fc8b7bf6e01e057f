"""`kernel_summary`: kernel time per (parent op category, parent op, kernel, stream).

See docs/report-tables.md#kernel_summary.

Every `kernel` event counts here, communication and unlinked ones included; copies and
memsets do not. A kernel with no operator above its launch is filed under the launch call,
in category `graph` for graph replays and `runtime` otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..perf.categories import CategoryTable
from ..trace.columns import MISSING
from ..trace.model import TraceModel


def kernel_summary(
    model: TraceModel, categories: CategoryTable, total_time_us: float
) -> pd.DataFrame:
    gpu = model.gpu
    kernels = gpu[(gpu["cat"] == "kernel").to_numpy()]
    names = model.names
    launcher = kernels["launcher"].to_numpy()
    launch = kernels["launch"].to_numpy()
    kernel_names = kernels["name"].astype(str).to_numpy()
    parent_op: list[str | None] = []
    parent_category: list[str | None] = []
    for op, call, kernel in zip(launcher, launch, kernel_names, strict=True):
        if op != MISSING:
            parent_op.append(names[op])
            parent_category.append(categories.category(names[op], kernel))
        elif call != MISSING:
            parent_op.append(names[call])
            graph = any(w in names[call].lower() for w in ("cudagraph", "graphlaunch"))
            parent_category.append("graph" if graph else "runtime")
        else:
            parent_op.append(None)
            parent_category.append(None)
    frame = pd.DataFrame(
        {
            "Parent op category": parent_category,
            "Parent cpu_op": parent_op,
            "Kernel name": kernel_names,
            "Kernel stream": kernels["stream"].to_numpy(),
            "dur": kernels["dur"].to_numpy(),
        }
    )
    keys = ["Parent op category", "Parent cpu_op", "Kernel name", "Kernel stream"]
    grouped = frame.groupby(keys, sort=False, dropna=False)["dur"]
    table = grouped.agg(["sum", "count", "mean", "min", "max"]).reset_index()
    table.columns = [
        *keys,
        *(f"Kernel duration (µs)_{s}" for s in ("sum", "count", "mean", "min", "max")),
    ]
    total_kernel = table["Kernel duration (µs)_sum"].sum()
    table["Percent of kernels time (%)"] = (
        table["Kernel duration (µs)_sum"] / total_kernel * 100 if total_kernel else np.nan
    )
    table["Percent of total time (%)"] = (
        table["Kernel duration (µs)_sum"] / total_time_us * 100 if total_time_us else np.nan
    )
    return table.sort_values(
        "Kernel duration (µs)_sum", ascending=False, kind="stable"
    ).reset_index(drop=True)
