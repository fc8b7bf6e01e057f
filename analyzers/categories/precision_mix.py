"""The fp32/fp64 matrix kernels that run without matrix units, read from their names, in the
operations that have no roofline (docs/perf-models.md#precision-without-shapes).

When a trace records no shapes the roofline has nothing to work on, but a kernel's name still
says its precision and whether it runs on tensor cores/MFMA (perf/kernel_precision.py). A
category's `simt_kernels` lists, per (operation, kernel), the GEMM/convolution/attention kernels
in fp32 or fp64 on CUDA cores/vector ALUs (SIMT/VALU) of its operations without a usable
roofline; findings/ranking/precision_item.py ranks them when they hold a material share of compute.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..perf.kernel_precision import read_kernel
from .op_row import KernelDetail, OpRow, ranked_rows

WIDE = ("fp32", "fp64")  # precisions that AMP/TF32 would lower


class SimtKernel(BaseModel):
    """One kernel of one operation without a roofline: wide precision, no matrix units."""

    model_config = ConfigDict(frozen=True)

    operation: str
    kernel: str
    precision: str  # fp32 or fp64
    vendor: str
    library: str | None
    convolution: bool  # a convolution kernel (channels_last applies)
    count: int
    time_ms: float


def simt_kernels(ops: pd.DataFrame, operations: Sequence[Any]) -> tuple[SimtKernel, ...]:
    """The SIMT fp32/fp64 matrix kernels of `ops`'s rows without a usable roofline.
    `operations` are the rows' Operations in build_operations's order (kernel time, longest
    first); a row without kernel details (one row per kernel name) is its own kernel; a row
    without a name has none to give."""
    if ops.empty or "name" not in ops:
        return ()
    found: list[SimtKernel] = []
    for row, op in zip(ranked_rows(ops), operations, strict=False):
        if row.name is None or _modelled(op):
            continue
        found.extend(_row_kernels(row.name, row))
    return tuple(sorted(found, key=lambda k: -k.time_ms))


def _modelled(op: Any) -> bool:
    """A usable roofline: an efficiency, not anomalous (findings/ranking/unmodelled.py's rule)."""
    eff = getattr(op, "efficiency", None)
    return eff is not None and eff.efficiency_percent is not None and not eff.is_anomaly


def _row_kernels(name: str, row: OpRow) -> Iterable[SimtKernel]:
    kernels = row.kernels
    if kernels is None:  # the row is its kernel
        count = row.operation_count or 0
        kernels = (KernelDetail(name, count, row.kernel_time_us, None),) if name else ()
    for d in kernels:
        kernel = d.name
        read = read_kernel(kernel)
        if read.precision not in WIDE or read.matrix_units is not False or not read.matrix_work:
            continue
        us = d.total_us or 0.0
        if us <= 0:
            continue
        yield SimtKernel(
            operation=name,
            kernel=kernel,
            precision=read.precision,
            vendor=read.vendor,
            library=read.library,
            convolution="conv" in (kernel + name).lower() or "cudnn" in kernel.lower(),
            count=int(d.count or 0),
            time_ms=round(us / 1000, 4),
        )
