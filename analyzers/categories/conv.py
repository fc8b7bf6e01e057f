"""Convolution (conv_fwd, conv_bwd): scored against the matrix roof; sizes transpose overhead."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.prepare.manifest import CategoryMetadata


def analyse(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    category: str = "conv_fwd",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score conv rows; reads `name` and `Kernel Time (µs)_sum` for the transpose share."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    kernel_us = pd.to_numeric(ops.get("Kernel Time (µs)_sum"), errors="coerce")
    kernel_us = pd.Series(kernel_us, dtype=float).fillna(0.0)
    transpose = names.str.contains("transpose", case=False, regex=False)
    transpose_ms = float(kernel_us[transpose.to_numpy()].sum()) / 1000 if len(ops) else 0.0
    total_ms = float(kernel_us.sum()) / 1000
    specific = {
        "transpose_count": int(transpose.sum()),
        "transpose_time_ms": round(transpose_ms, 3),
        "transpose_overhead_percent": round(transpose_ms / total_ms * 100, 2) if total_ms else 0.0,
        **scoring.peaks(metadata),
    }
    return scoring.score(ops, metadata, category, fusion_map=fusion_map, specific=specific)
