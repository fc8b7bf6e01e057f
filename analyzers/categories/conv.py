"""Convolution (conv_fwd, conv_bwd): scored against the matrix roof; sizes the layout
transposes the convolution ops launch (docs/analysis.md#compute-categories)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from .op_row import OpRow, kernel_time_us, op_rows
from .scoring import peaks

TRANSPOSE = "transpose"  # MIOpen's batched_transpose_*, transpose_NCHW2CNHW_* ...


def _transposes(row: OpRow) -> tuple[int, float]:
    """(launches, µs) of the layout-transpose kernels one row's op launched. A row without
    kernel details (a row per kernel name, GPU-only traces) counts when its name is one."""
    kernels = row.kernels
    if kernels is None:
        if TRANSPOSE not in (row.name or "").lower():
            return 0, 0.0
        return int(row.operation_count or 0), row.kernel_time_us or 0.0
    launches, total_us = 0, 0.0
    for kernel in kernels:
        if TRANSPOSE in kernel.name.lower():
            launches += int(kernel.count or 0)
            total_us += kernel.total_us or 0.0
    return launches, total_us


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """The layout-transpose share: NCHW<->NHWC (and CNHW) transpose kernels the convolution
    ops launched around their GEMM kernels, in % of the category's kernel time; reads
    `name`, `kernel_details_summary`, `operation_count` and `Kernel Time (µs)_sum`."""
    found = [_transposes(row) for row in op_rows(ops)]
    transpose_ms = sum(us for _, us in found) / 1000
    total_ms = float(kernel_time_us(ops).sum()) / 1000
    return {
        "transpose_count": sum(n for n, _ in found),
        "transpose_time_ms": round(transpose_ms, 3),
        "transpose_overhead_percent": round(transpose_ms / total_ms * 100, 2) if total_ms else 0.0,
        **peaks(metadata),
    }
