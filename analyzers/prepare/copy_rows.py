"""Compute rows that also launched copies (docs/analysis.md#category-time): a cross-device
`aten::copy_` with a dtype change copies, then converts on the device. The copy is judged by
the copy analysis (docs/analysis.md#copies), so it leaves the row's kernel time here, and the
row's roofline figures are restated over the time its computation kernels ran.

The perf report keeps TraceLens's figures (its kernel time counts the copy). Each call of a
row shares one signature, so each is taken to spend the same share of its time on copies:
the per-call times shrink by that share and the rates (TB/s, TFLOPS/s, % of the roofline)
grow by it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

KERNEL_SUM = "Kernel Time (µs)_sum"
PER_CALL_TIMES = tuple(f"Kernel Time (µs)_{s}" for s in ("mean", "std", "median", "min", "max"))
RATES = tuple(
    f"{m}_{s}"
    for m in ("TB/s", "TFLOPS/s", "Pct Roofline")
    for s in ("mean", "std", "median", "min", "max")
)


def without_copies(rows: pd.DataFrame, copy_us: Mapping[int, float]) -> pd.DataFrame:
    """The rows with each one's copy time taken out of its kernel time (module docstring);
    rows without copies are unchanged."""
    if not copy_us or rows.empty or KERNEL_SUM not in rows:
        return rows
    moved = rows["ex_UID"].astype(int).map(copy_us).fillna(0.0).to_numpy(dtype=float)
    if not (moved > 0).any():
        return rows
    total = pd.to_numeric(rows[KERNEL_SUM], errors="coerce").to_numpy(dtype=float)
    kept = np.maximum(total - moved, 0.0)
    share = np.divide(kept, total, out=np.ones_like(total), where=(moved > 0) & (total > 0))
    out = rows.copy()
    out[KERNEL_SUM] = np.where(moved > 0, kept, total)
    for column in PER_CALL_TIMES:
        if column in out:
            out[column] = pd.to_numeric(out[column], errors="coerce") * share
    for column in RATES:
        if column in out:
            grown = np.divide(1.0, share, out=np.zeros_like(share), where=share > 0)
            out[column] = pd.to_numeric(out[column], errors="coerce") * grown
    return out
