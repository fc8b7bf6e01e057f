"""Reduce: reductions and softmax scored against HBM bandwidth; counts softmax rows."""

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
    category: str = "reduce",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score reduce rows; reads `name` for `softmax_count`."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    specific = {
        "softmax_count": int(names.str.contains("softmax", regex=False).sum()),
        "peak_hbm_bw_tbs": metadata.peak_hbm_bw_tbs,
    }
    return scoring.score(ops, metadata, category, fusion_map=fusion_map, specific=specific)
