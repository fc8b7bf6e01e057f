"""`category_data/<key>_tree_data.json`: where a category's significant ops sit in the model.

TraceLens documents this artifact and never writes it (docs/analysis.md#tree-data). Ours is
built from the unified table the category CSV comes from: for each significant op (over 10 %
of the category's kernel time, else the five largest), its module chain, call stack, entry
point and kernels, so an analyst never needs to load the trace.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..report.write_csv import for_output

SIGNIFICANT_SHARE = 0.10
TOP_N_FALLBACK = 5
MODULE_PREFIX = "nn.Module: "


def significant(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows over 10 % of the category's kernel time; the five largest when none is."""
    time = rows["Kernel Time (µs)_sum"].fillna(0.0)
    total = float(time.sum())
    picked = rows[(time > SIGNIFICANT_SHARE * total).to_numpy()] if total > 0 else rows.iloc[:0]
    if picked.empty:
        picked = rows.assign(_t=time).sort_values("_t", ascending=False).head(TOP_N_FALLBACK)
        picked = picked.drop(columns="_t")
    return picked


def _frames(stack: Any) -> list[str]:
    return [f for f in stack if isinstance(f, str)] if isinstance(stack, list) else []


def _text(cell: Any) -> str | None:
    """A JSON-text cell, or None where the row has none (pandas gives NaN, not valid JSON)."""
    return cell if isinstance(cell, str) else None


def _entry(row: pd.Series, shown: pd.Series, total_us: float) -> dict[str, Any]:
    stack = row.get("call_stack_full")
    kernels = row.get("kernel_details_summary")
    time_us = float(row["Kernel Time (µs)_sum"])
    return {
        "name": row["name"],
        "input_dims": _text(shown.get("Input Dims")),
        "input_type": _text(shown.get("Input type")),
        "operation_count": int(row.get("operation_count", 1)),
        "kernel_time_ms": round(time_us / 1000.0, 3),
        "percent_of_category": round(time_us / total_us * 100.0, 2) if total_us else None,
        "entry_point": row.get("entry_point"),
        "module_chain": [
            f[len(MODULE_PREFIX) :] for f in _frames(stack) if f.startswith(MODULE_PREFIX)
        ],
        "call_stack": stack if isinstance(stack, list) else [],
        "kernels": [
            {key: k.get(key) for key in ("name", "stream", "count", "mean_duration_us")}
            for k in (kernels if isinstance(kernels, list) else [])
            if isinstance(k, dict)
        ],
    }


def tree_data(key: str, rows: pd.DataFrame) -> dict[str, Any]:
    """The category's tree data document."""
    picked = significant(rows)
    total_us = float(rows["Kernel Time (µs)_sum"].fillna(0.0).sum())
    shown = for_output(picked)  # JSON text for the argument cells, as in the CSV
    return {
        "category": key,
        "selection": "ops over 10 % of the category's kernel time, else the five largest",
        "operations": [_entry(row, shown.loc[index], total_us) for index, row in picked.iterrows()],
    }
