"""Write a perf report to disk: `perf_report_csvs/*.csv` and `perf_report.xlsx`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import layout
from .build import PerfReport
from .csv_cells import ESCAPED, CsvCells
from .write_csv import for_output, write_csv_folder
from .write_xlsx import write_xlsx

TOP_OPS = 15
TOP_COLUMNS = [  # the workbook puts the roofline figures after the name (xlsx_layout.py)
    "name",
    "Input Dims",  # one operator at several shapes is several rows: the shapes tell them apart
    "op category",
    "operation_count",
    "Kernel Time (µs)_sum",
    "Percentage (%)",
    "TFLOPS/s_mean",
    "TB/s_mean",
    "Pct Roofline_mean",
    "Roofline Bound",
]


@dataclass(frozen=True)
class ReportFiles:
    csv_folder: Path
    csvs: list[Path]
    xlsx: Path


def roofline_coverage(report: PerfReport) -> float | None:
    """Share of attributed kernel time on ops that got a Pct Roofline (0-1)."""
    if report.unified is None:
        return None
    inst = report.unified.instances
    total = inst["Kernel Time (µs)"].sum()
    if "Pct Roofline" not in inst or total <= 0:
        return None
    covered = inst.loc[np.isfinite(inst["Pct Roofline"].to_numpy(dtype=float)), "Kernel Time (µs)"]
    return float(covered.sum() / total)


def top_operations(sheets: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The summary sheet's top operations from the (rendered) report sheets."""
    summary = sheets.get("unified_perf_summary")
    if summary is None:
        return pd.DataFrame(columns=["name"])
    columns = [c for c in TOP_COLUMNS if c in summary.columns]
    return summary[columns].head(TOP_OPS)


def summary_facts(report: PerfReport, trace_name: str, gpu: str) -> dict[str, Any]:
    timeline = report.timeline.pooled
    facts: dict[str, Any] = {
        "Trace": trace_name,
        "GPU": gpu,
        "GPU busy (ms)": round(timeline.busy_time / 1e3, 3),
        "Total GPU window (ms)": round(timeline.total_time / 1e3, 3),
    }
    platform = report.platform
    if platform is None:
        facts["Platform"] = "none: roofline columns omitted (pass --platform or --platform-file)"
    else:
        facts["Platform"] = platform.name
        facts["Memory bandwidth (GB/s)"] = platform.mem_bw()
        bf16 = platform.roof_tflops("matrix_bf16")
        facts["Matrix bf16 roof (TFLOPS)"] = bf16
        facts["Roof figures"] = "measured max-achievable" if platform.measured else "datasheet peak"
    coverage = roofline_coverage(report)
    if coverage is not None:
        facts["Kernel time with a roofline (%)"] = round(coverage * 100, 1)
    return facts


def write_perf_report(
    report: PerfReport, out_dir: Path, trace_name: str, gpu: str, *, cells: CsvCells = ESCAPED
) -> ReportFiles:
    # the workbook first: it is the step that can fail on odd text, and then nothing is written
    csv_folder = out_dir / layout.PERF_CSVS
    rendered = {name: for_output(frame) for name, frame in report.sheets.items()}  # once
    xlsx = write_xlsx(
        out_dir / layout.WORKBOOK,
        rendered,
        title=f"rooflens perf report: {trace_name}",
        facts=summary_facts(report, trace_name, gpu),
        top_ops=top_operations(rendered),
        notes=report.notes,
        rendered=True,
    )
    csvs = write_csv_folder(rendered, csv_folder, rendered=True, cells=cells)
    return ReportFiles(csv_folder=csv_folder, csvs=csvs, xlsx=xlsx)
