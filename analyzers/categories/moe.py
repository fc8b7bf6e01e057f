"""MoE (moe_fused, moe_unfused): expert layers; NO_DATA when the category has no CSV."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.prepare.manifest import CategoryMetadata

NO_DATA_MESSAGE = "No MoE operations found in this trace"


def analyse(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    category: str = "moe_fused",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score MoE rows; the specifics are the roofs."""
    return scoring.score(
        ops, metadata, category, fusion_map=fusion_map, specific=scoring.peaks(metadata)
    )
