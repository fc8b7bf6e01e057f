"""Convolution (conv_fwd, conv_bwd): scored against the matrix roof; sizes transpose overhead."""

from __future__ import annotations

from typing import Any

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.prepare.manifest import CategoryMetadata


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """The transpose share; reads `name` and `Kernel Time (µs)_sum`."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    kernel_us = pd.to_numeric(ops.get("Kernel Time (µs)_sum"), errors="coerce")
    kernel_us = pd.Series(kernel_us, dtype=float).fillna(0.0)
    transpose = names.str.contains("transpose", case=False, regex=False)
    transpose_ms = float(kernel_us[transpose.to_numpy()].sum()) / 1000 if len(ops) else 0.0
    total_ms = float(kernel_us.sum()) / 1000
    return {
        "transpose_count": int(transpose.sum()),
        "transpose_time_ms": round(transpose_ms, 3),
        "transpose_overhead_percent": round(transpose_ms / total_ms * 100, 2) if total_ms else 0.0,
        **scoring.peaks(metadata),
    }
