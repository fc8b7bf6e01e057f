"""What the category data of a comparative run adds (docs/compare.md#category-data-of-a-comparison).

Trace 1's categories are cut from its comparative `unified_perf_summary` (the comparison
columns ride along into every `<key>_ops.csv`); the manifest gains trace 2's timeline figures
and its kernel time per category, grouped the way trace 1's categories are keyed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from ..compare.comparison import Comparison
from ..report.build import PerfReport
from .categories import (
    GpuUtilization,
    gpu_utilization,
    normalise_category,
)
from .manifest import CategoryTables

DIGITS = 10  # the manifest's trace-2 summary rounds as TraceLens's does


def comparative_report(report1: PerfReport, comparison: Comparison) -> PerfReport:
    """Trace 1's report with the comparison columns in its sheets."""
    return replace(report1, sheets=comparison.trace1_sheets)


def with_trace2(tables: CategoryTables, comparison: Comparison) -> CategoryTables:
    """The tables with the manifest's trace-2 keys filled in."""
    sheets = comparison.report.sheets
    manifest = tables.manifest.model_copy(
        update={
            "trace2_gpu_utilization": GpuUtilization(**gpu_utilization(sheets.get("gpu_timeline"))),
            "trace2_ops_summary_by_category": trace2_by_category(
                sheets.get("unified_perf_summary"), sheets.get("ops_summary_by_category")
            ),
        }
    )
    return replace(tables, manifest=manifest)


def trace2_by_category(
    unified: pd.DataFrame | None, by_category: pd.DataFrame | None
) -> list[dict[str, Any]]:
    """Trace 2's operators grouped by category key: instance count, kernel time (ms) and its
    share, largest first. Without operator rows, the report's own per-category sheet."""
    if unified is None or unified.empty:
        return [] if by_category is None else by_category.to_dict("records")
    keys = unified["op category"].map(lambda value: normalise_category(value)[0])
    grouped = (
        pd.DataFrame(
            {
                "op category": keys,
                "Count": pd.to_numeric(unified["operation_count"], errors="coerce").fillna(0),
                "total_direct_kernel_time_ms": pd.to_numeric(
                    unified["Kernel Time (µs)_sum"], errors="coerce"
                ).fillna(0.0)
                / 1000,
            }
        )
        .groupby("op category", sort=False, as_index=False)
        .sum()
    )
    grouped = grouped.sort_values("total_direct_kernel_time_ms", ascending=False, kind="stable")
    total = grouped["total_direct_kernel_time_ms"].sum()
    share = (
        grouped["total_direct_kernel_time_ms"] / total * 100 if total else 0.0 * grouped["Count"]
    )
    grouped["Percentage (%)"] = share
    grouped["Cumulative Percentage (%)"] = share.cumsum()
    return [
        {
            "op category": str(row["op category"]),
            "Count": int(row["Count"]),
            **{
                column: round(float(row[column]), DIGITS)
                for column in (
                    "total_direct_kernel_time_ms",
                    "Percentage (%)",
                    "Cumulative Percentage (%)",
                )
            },
        }
        for row in grouped.to_dict("records")
    ]
