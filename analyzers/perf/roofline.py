"""Roofline metrics (docs/perf-models.md#roofline), vectorised over op instances.

Static columns (GFLOPS, Data Moved, FLOPS/Byte, Compute Spec, Roofline Time and Bound) come
from the perf model once per signature; achieved rates and Pct Roofline from each instance's
own kernel time. Data Moved is in MiB (2**20) and TB/s in decimal units, as TraceLens writes.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd

MIB = float(2**20)


class Roof(Protocol):
    """What the roofline needs of a platform."""

    def roof_tflops(self, compute_spec: str) -> float | None: ...

    def mem_bw(self) -> float: ...


def static_metrics(
    flops: np.ndarray,
    nbytes: np.ndarray,
    spec: np.ndarray,
    platform: Roof | None,
    memory_only: np.ndarray | None = None,
) -> pd.DataFrame:
    """Per signature: GFLOPS, Data Moved (MB), FLOPS/Byte, and the roofline time and bound.

    `memory_only` marks vector ops whose precision has no compute roof (integer and bool
    elementwise work, opaque copies): they are scored against the memory roof alone, which
    is the roof such ops hit (docs/deviations.md).
    """
    flops = flops.astype(np.float64)
    nbytes = nbytes.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        intensity = np.where(nbytes > 0, flops / nbytes, np.nan)
    out = pd.DataFrame(
        {
            "GFLOPS": flops / 1e9,
            "Data Moved (MB)": nbytes / MIB,
            "FLOPS/Byte": intensity,
            "Compute Spec": spec,
        }
    )
    if platform is None:
        return out
    peak = np.array(
        [platform.roof_tflops(s) if s else None for s in spec], dtype=np.float64
    )  # None -> nan
    usable = np.isfinite(peak) & (flops > 0) & np.isfinite(nbytes)
    memory_roof = np.isfinite(nbytes) & (nbytes > 0) & ~usable
    memory_roof &= memory_only if memory_only is not None else False
    compute_us = np.where(usable, flops / (peak * 1e12) * 1e6, np.nan)
    memory_us = np.where(usable | memory_roof, nbytes / (platform.mem_bw() * 1e9) * 1e6, np.nan)
    out["Roofline Time (µs)"] = np.fmax(compute_us, memory_us)
    out["Roofline Bound"] = np.where(
        usable,
        np.where(compute_us >= memory_us, "COMPUTE_BOUND", "MEMORY_BOUND"),
        np.where(memory_roof, "MEMORY_BOUND", None),
    )
    return out


def achieved_metrics(
    gflops: np.ndarray, data_mb: np.ndarray, roofline_us: np.ndarray | None, kernel_us: np.ndarray
) -> pd.DataFrame:
    """Per instance: TFLOPS/s, TB/s and Pct Roofline from its own kernel time (NaN at 0 µs)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        seconds = np.where(kernel_us > 0, kernel_us / 1e6, np.nan)
        out = pd.DataFrame(
            {
                "TFLOPS/s": gflops / 1e3 / seconds,
                "TB/s": data_mb * MIB / 1e12 / seconds,
            }
        )
        if roofline_us is not None:
            out["Pct Roofline"] = np.where(kernel_us > 0, roofline_us / kernel_us * 100, np.nan)
    return out
