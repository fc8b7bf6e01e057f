"""GEMM: matrix multiplies scored against the matrix roof; counts quantized variants."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.prepare.manifest import CategoryMetadata

QUANTIZED = re.compile(r"w8a8|int8|fp8|w4a16|w4a4|mxfp4|fp4", re.IGNORECASE)
FIELDS = ("Input Dims", "Input type", "has_perf_model")


def classify(row: Mapping[str, Any]) -> dict[str, Any]:
    quantized = bool(QUANTIZED.search(str(row.get("name", ""))))
    return {"is_quantized": quantized, "gemm_type": "quantized" if quantized else "regular"}


def analyse(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    category: str = "gemm",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score GEMM rows; reads `name` and `TFLOPS/s_mean` for the specifics."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    tflops = pd.to_numeric(ops.get("TFLOPS/s_mean"), errors="coerce")
    specific = {
        "quantized_count": int(names.str.contains(QUANTIZED).sum()),
        "missing_perf_model_count": int(pd.Series(tflops).isna().sum()),
        **scoring.peaks(metadata),
    }
    return scoring.score(
        ops,
        metadata,
        category,
        extra_fields=FIELDS,
        classify=classify,
        fusion_map=fusion_map,
        specific=specific,
    )
