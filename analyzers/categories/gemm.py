"""GEMM: matrix multiplies scored against the matrix roof; counts quantized variants."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from . import scoring

QUANTIZED = re.compile(r"w8a8|int8|fp8|w4a16|w4a4|mxfp4|fp4", re.IGNORECASE)
FIELDS = ("Input Dims", "Input type", "has_perf_model")


def classify(row: Mapping[str, Any]) -> dict[str, Any]:
    quantized = bool(QUANTIZED.search(str(row.get("name", ""))))
    return {"is_quantized": quantized, "gemm_type": "quantized" if quantized else "regular"}


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """Quantized and unmodelled counts; reads `name` and `TFLOPS/s_mean`."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    tflops = pd.to_numeric(ops.get("TFLOPS/s_mean"), errors="coerce")
    return {
        "quantized_count": int(names.str.contains(QUANTIZED).sum()),
        "missing_perf_model_count": int(pd.Series(tflops).isna().sum()),
        **scoring.peaks(metadata),
    }
