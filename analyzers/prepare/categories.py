"""Category keys, the analyst skill per category, GPU utilisation and per-category time split.

See docs/analysis.md#category-keys (keys and skills), docs/analysis.md#gpu-utilisation and
docs/analysis.md#time-breakdown. Pure functions over report tables.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..layout import CPU_IDLE, KERNEL_FUSION, MULTI_KERNEL

GENERIC_SKILL = "generic-op-analyzer"

# Manifest key -> analyst skill; any other key gets GENERIC_SKILL.
SKILLS: dict[str, str] = {
    "gemm": "gemm-analyzer",
    "groupedgemm_fwd": "gemm-analyzer",
    "groupedgemm_bwd": "gemm-analyzer",
    "sdpa_fwd": "sdpa-analyzer",
    "sdpa_bwd": "sdpa-analyzer",
    "inferenceattention": "sdpa-analyzer",
    "elementwise": "elementwise-analyzer",
    "reduce": "reduce-analyzer",
    "triton": "triton-analyzer",
    "norm": "norm-analyzer",
    "norm_fwd": "norm-analyzer",
    "norm_bwd": "norm-analyzer",
    "rmsnorm": "norm-analyzer",
    "convolution": "convolution-analyzer",
    "conv_fwd": "convolution-analyzer",
    "conv_bwd": "convolution-analyzer",
    "moe_fused": "moe-analyzer",
    "moe_unfused": "moe-analyzer",
    CPU_IDLE: "cpu-idle-analyzer",
    MULTI_KERNEL: "multi-kernel-analyzer",
    KERNEL_FUSION: "kernel-fusion-analyzer",
}

KERNEL_TIME = "Kernel Time (µs)_sum"
COMPUTATION_TIME = "Computation Time (µs)_sum"  # prepare/computation_time.py's column
DIRECT_KERNEL_MS = "total_direct_kernel_time_ms"
DURATION = "total_duration_us"
DURATION_FALLBACK = "Duration (µs)_sum"

# `<cpu_op>-><kernel> (Synthetic Op)`: a kernel its enclosing op does not own; the
# row's CPU duration is a copy of that op's, which launched kernels counted on other rows.
# Rows under a bare runtime launch (`cuLaunchKernelEx->...`) carry the launch's own time.
COPIED_OP_ROW = re.compile(r"^(?!(?:cuda|cu|hip)[A-Z]).+->.+ \(Synthetic Op\)$")
SYNC_FACTOR = 5.0  # a row is sync-bound when its CPU duration exceeds 5x its kernel time
BOTTLENECK_SHARE = 0.1  # of the category's kernel time ...
BOTTLENECK_MIN_MS = 1.0  # ... and at least this much sync time
BREAKDOWN_NOTE = (
    "Use gpu_kernel_time_ms for bottleneck prioritization. "
    "sync_time_ms indicates host-device sync overhead."
)
TIME_METRIC_NOTE = (
    "Use gpu_kernel_time_ms for bottleneck prioritization. "
    "cpu_duration_ms includes sync/launch overhead."
)

# gpu_timeline row type -> (gpu_utilization key, column read)
_UTILIZATION_ROWS = (
    ("total_time", "total_time_ms", "time ms"),
    ("computation_time", "computation_time_percent", "percent"),
    ("exposed_comm_time", "exposed_comm_time_percent", "percent"),
    ("exposed_memcpy_time", "exposed_memcpy_time_percent", "percent"),
    ("idle_time", "idle_time_percent", "percent"),
)


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # list-like cells
        return False


def normalise_category(value: Any) -> tuple[str, str]:
    """(manifest key, display name) of an `op category` cell.

    Empty or missing -> ("other", "Other"); else the key is the value with spaces and "/"
    replaced by "_", lower-cased, and the display name is the value unchanged.
    """
    if _missing(value) or not str(value).strip():
        return "other", "Other"
    text = str(value)
    return text.replace(" ", "_").replace("/", "_").lower(), text


class CategoryLookupError(LookupError):
    """A category name that is not one of the run's; the message lists the ones it has."""


def _folded(name: str) -> str:
    return name.strip().replace(" ", "_").replace("/", "_").lower()


def find_category(given: str, categories: list[tuple[str, str]]) -> str:
    """The key of the category named `given`, by key or display name in any case.

    `categories` holds (key, display name) pairs; `conv_bwd`, `CONV_bwd` and `Conv_BWD` all
    name the same one.
    """
    wanted = _folded(given)
    for key, display in categories:
        if wanted in (_folded(key), _folded(display)):
            return key
    known = ", ".join(key for key, _ in categories) or "none"
    raise CategoryLookupError(f"{given!r} is not a category of this run; its categories: {known}")


def skill_for(key: str) -> str:
    """The analyst skill for a manifest key (generic-op-analyzer when not catalogued)."""
    return SKILLS.get(key, GENERIC_SKILL)


def analyst_for(key: str) -> str:
    """The analyst a category goes to, by name: its prompt's (gemm, generic-op, cpu-idle)."""
    return skill_for(key).removesuffix("-analyzer")


class GpuUtilization(BaseModel):
    """How the GPU's time splits, from the gpu_timeline sheet."""

    model_config = ConfigDict(extra="forbid")

    total_time_ms: float = 0.0
    computation_time_percent: float = 0.0
    exposed_comm_time_percent: float = 0.0
    exposed_memcpy_time_percent: float = 0.0
    idle_time_percent: float = 0.0


def gpu_utilization(timeline_sheet: pd.DataFrame | None) -> dict[str, float]:
    """The five utilisation figures from a gpu_timeline table (`type`, `time ms`, `percent`).

    A missing row (or a missing / non-numeric value) gives 0.
    """
    out = {key: 0.0 for _, key, _ in _UTILIZATION_ROWS}
    if timeline_sheet is None or "type" not in timeline_sheet:
        return out
    by_type = timeline_sheet.drop_duplicates("type").set_index("type")
    for row_type, key, column in _UTILIZATION_ROWS:
        if row_type in by_type.index and column in by_type.columns:
            value = pd.to_numeric(by_type.at[row_type, column], errors="coerce")
            out[key] = 0.0 if _missing(value) else float(value)
    return out


class TimeBreakdown(BaseModel):
    """A category's kernel time, CPU duration and host-device sync overhead (ms)."""

    model_config = ConfigDict(extra="forbid")

    gpu_kernel_time_ms: float
    cpu_duration_ms: float
    # an int 0 when no row is sync-bound, as TraceLens writes it
    sync_time_ms: int | float
    sync_ops_count: int
    has_sync_bottleneck: bool
    note: str = BREAKDOWN_NOTE

    @classmethod
    def zeros(cls) -> TimeBreakdown:
        """What TraceLens gives the kernel_fusion entry."""
        return cls(
            gpu_kernel_time_ms=0.0,
            cpu_duration_ms=0.0,
            sync_time_ms=0,
            sync_ops_count=0,
            has_sync_bottleneck=False,
        )


def _copied_op_rows(rows: pd.DataFrame) -> pd.Series:
    """Synthetic rows whose CPU duration is their enclosing op's: no sync evidence of theirs."""
    if "name" not in rows:
        return pd.Series(False, index=rows.index)
    return rows["name"].astype(str).str.match(COPIED_OP_ROW)


def _numbers(rows: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(rows[column], errors="coerce").fillna(0.0).astype(float)


def time_breakdown(rows: pd.DataFrame) -> TimeBreakdown:
    """The time breakdown of one category's unified_perf_summary rows.

    Kernel time: `Computation Time (µs)_sum` when the rows carry it
    (docs/analysis.md#category-time), else `Kernel Time (µs)_sum` (else
    `total_direct_kernel_time_ms`); the sync test reads the rows' own kernel time. CPU duration:
    `total_duration_us` (else `Duration (µs)_sum`, else the kernel time). A row with kernel
    time > 0 and duration > 5x kernel time adds (duration - kernel) to the sync time. The
    bottleneck flag needs sync > 10 % of kernel time and > 1 ms (on unrounded sums); the
    figures are then rounded to 3 decimals.
    """
    if KERNEL_TIME in rows:
        kernel_us = _numbers(rows, KERNEL_TIME)
    elif DIRECT_KERNEL_MS in rows:
        kernel_us = _numbers(rows, DIRECT_KERNEL_MS) * 1000.0
    else:
        kernel_us = pd.Series(0.0, index=rows.index)
    if DURATION in rows:
        duration_us = _numbers(rows, DURATION)
    elif DURATION_FALLBACK in rows:
        duration_us = _numbers(rows, DURATION_FALLBACK)
    else:
        duration_us = kernel_us
    if COMPUTATION_TIME in rows:  # the category's share of computation time
        gpu_ms = float(_numbers(rows, COMPUTATION_TIME).sum()) / 1000.0
    else:
        gpu_ms = float(kernel_us.sum()) / 1000.0
    cpu_ms = float(duration_us.sum()) / 1000.0
    synced = (kernel_us > 0) & (duration_us > SYNC_FACTOR * kernel_us) & ~_copied_op_rows(rows)
    count = int(synced.sum())
    sync_ms: int | float = 0
    if count:
        sync_ms = float((duration_us[synced] - kernel_us[synced]).sum()) / 1000.0
    bottleneck = sync_ms > BOTTLENECK_SHARE * gpu_ms and sync_ms > BOTTLENECK_MIN_MS
    return TimeBreakdown(
        gpu_kernel_time_ms=round(gpu_ms, 3),
        cpu_duration_ms=round(cpu_ms, 3),
        sync_time_ms=round(sync_ms, 3),
        sync_ops_count=count,
        has_sync_bottleneck=bool(bottleneck),
    )
