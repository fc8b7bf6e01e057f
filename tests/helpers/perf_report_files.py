"""The tables `rooflens report` writes as CSV files (perf_report_csvs/<table>.csv)."""

from __future__ import annotations

CSVS = [
    "gpu_timeline",
    "ops_summary_by_category",
    "ops_summary",
    "ops_unique_args",
    "unified_perf_summary",
    "kernel_summary",
]
