"""Triton: Inductor-generated kernels, classified by their name prefix."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from .op_row import OpRow, op_names
from .scoring import peaks

KINDS = (("triton_poi_", "pointwise"), ("triton_red_", "reduction"), ("triton_per_", "persistent"))


def kernel_type(name: str) -> str:
    return next((kind for prefix, kind in KINDS if prefix in name), "other")


def classify(row: OpRow) -> dict[str, Any]:
    return {"kernel_type": kernel_type(row.name or "")}


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """Kernel-type counts; reads `name`."""
    kinds = [kernel_type(n) for n in op_names(ops)]
    counts = {
        f"{kind}_count": kinds.count(kind)
        for kind in ("pointwise", "reduction", "persistent", "other")
    }
    return {**counts, **peaks(metadata)}
