"""Triton: Inductor-generated kernels, classified by their name prefix."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.prepare.manifest import CategoryMetadata

KINDS = (("triton_poi_", "pointwise"), ("triton_red_", "reduction"), ("triton_per_", "persistent"))


def kernel_type(name: str) -> str:
    return next((kind for prefix, kind in KINDS if prefix in name), "other")


def classify(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"kernel_type": kernel_type(str(row.get("name", "")))}


def analyse(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    category: str = "triton",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score Triton rows; reads `name` for the kernel-type counts."""
    kinds = [kernel_type(str(n)) for n in ops.get("name", pd.Series(dtype=str))]
    specific = {
        f"{kind}_count": kinds.count(kind)
        for kind in ("pointwise", "reduction", "persistent", "other")
    }
    return scoring.score(
        ops,
        metadata,
        category,
        classify=classify,
        fusion_map=fusion_map,
        specific={**specific, **scoring.peaks(metadata)},
    )
