"""Norm (norm_fwd, norm_bwd, rmsnorm): normalisation layers scored against HBM bandwidth."""

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
    category: str = "norm_fwd",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score norm rows; the only specific is the HBM roof."""
    specific = {"peak_hbm_bw_tbs": metadata.peak_hbm_bw_tbs}
    return scoring.score(ops, metadata, category, fusion_map=fusion_map, specific=specific)
