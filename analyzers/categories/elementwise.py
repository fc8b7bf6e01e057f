"""Elementwise: memory-bound vector ops scored against HBM bandwidth."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.prepare.manifest import CategoryMetadata

FIELDS = ("Input Dims", "Input type", "FLOPS/Byte")


def analyse(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    category: str = "elementwise",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score elementwise rows; the only specific is the HBM roof."""
    specific = {"peak_hbm_bw_tbs": metadata.peak_hbm_bw_tbs}
    return scoring.score(
        ops, metadata, category, extra_fields=FIELDS, fusion_map=fusion_map, specific=specific
    )
