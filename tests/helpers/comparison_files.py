"""Comparison tables written on their own, as a run folder holds them (the pipeline writes
them through pipeline/folder.py): for tests that read the files back."""

from __future__ import annotations

from pathlib import Path

from rooflens.analyzers.compare.compare_columns import DIFF_STATS_SHEET, comparison_sheets
from rooflens.analyzers.compare.diff_stats import (
    MERGED_TREE_FILE,
    diff_stats,
    diff_stats_unique_args,
)
from rooflens.analyzers.compare.merged_text import merged_tree_text
from rooflens.analyzers.compare.tree_diff import TreeDiff
from rooflens.analyzers.report.build import PerfReport
from rooflens.analyzers.report.write_csv import atomic_write_bytes, write_csv_folder


def write_comparison_csvs(report: PerfReport, diff: TreeDiff, folder: Path) -> list[Path]:
    """Write trace 1's comparative CSV folder (conventionally `perf_report_trace1_csvs/`):
    every sheet with the comparison columns, and `diff_stats.csv`; returns the paths."""
    stats = diff_stats(diff)
    sheets = comparison_sheets(report, diff, stats)
    return write_csv_folder({**sheets, DIFF_STATS_SHEET: stats}, folder)


def write_diff_stats(diff: TreeDiff, folder: Path) -> list[Path]:
    """Write `diff_stats.csv`, `diff_stats_unique_args_summary.csv` and the merged tree as
    `merged_tree_output.txt` (TraceLens's file names), each atomically."""
    stats = diff_stats(diff)
    sheets = {"diff_stats": stats, "diff_stats_unique_args_summary": diff_stats_unique_args(stats)}
    written = write_csv_folder(sheets, folder)
    text = folder / MERGED_TREE_FILE
    atomic_write_bytes(text, merged_tree_text(diff).encode("utf-8"))
    return [*written, text]
