"""Convolution (conv_fwd, conv_bwd): scored against the matrix roof; sizes the layout
transposes the convolution ops launch (docs/analysis.md#compute-categories)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from ..report.cells import finite_number, structured
from . import scoring

TRANSPOSE = "transpose"  # MIOpen's batched_transpose_*, transpose_NCHW2CNHW_* ...


def _transposes(row: dict[str, Any]) -> tuple[int, float]:
    """(launches, µs) of the layout-transpose kernels one row's op launched. A row without
    kernel details (a row per kernel name, GPU-only traces) counts when its name is one."""
    details = structured(row.get("kernel_details_summary"))
    if not isinstance(details, list):
        if TRANSPOSE not in str(row.get("name", "")).lower():
            return 0, 0.0
        count = finite_number(row.get("operation_count")) or 0
        return int(count), finite_number(row.get("Kernel Time (µs)_sum")) or 0.0
    launches, total_us = 0, 0.0
    for kernel in details:
        if isinstance(kernel, dict) and TRANSPOSE in str(kernel.get("name", "")).lower():
            launches += int(finite_number(kernel.get("count")) or 0)
            total_us += finite_number(kernel.get("total_duration_us")) or 0.0
    return launches, total_us


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """The layout-transpose share: NCHW<->NHWC (and CNHW) transpose kernels the convolution
    ops launched around their GEMM kernels, in % of the category's kernel time; reads
    `name`, `kernel_details_summary`, `operation_count` and `Kernel Time (µs)_sum`."""
    found = [_transposes(row) for row in scoring.records(ops)]
    transpose_ms = sum(us for _, us in found) / 1000
    kernel_us = pd.to_numeric(ops.get("Kernel Time (µs)_sum"), errors="coerce")
    total_ms = float(pd.Series(kernel_us, dtype=float).fillna(0.0).sum()) / 1000
    return {
        "transpose_count": sum(n for n, _ in found),
        "transpose_time_ms": round(transpose_ms, 3),
        "transpose_overhead_percent": round(transpose_ms / total_ms * 100, 2) if total_ms else 0.0,
        **scoring.peaks(metadata),
    }
