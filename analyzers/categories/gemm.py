"""GEMM: matrix multiplies scored against the matrix roof; counts quantized variants."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from .op_row import OpRow
from .scoring import peaks

QUANTIZED = re.compile(r"w8a8|int8|fp8|w4a16|w4a4|mxfp4|fp4", re.IGNORECASE)
FIELDS = ("Input Dims", "Input type", "has_perf_model")
TFLOPS = "TFLOPS/s_mean"


def classify(row: OpRow) -> dict[str, Any]:
    quantized = bool(QUANTIZED.search(row.name or ""))
    return {"is_quantized": quantized, "gemm_type": "quantized" if quantized else "regular"}


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """Quantized and unmodelled counts; reads `name` and `TFLOPS/s_mean`."""
    names = ops["name"].astype(str) if "name" in ops else pd.Series(dtype=str)
    if TFLOPS in ops:
        missing = int(pd.to_numeric(ops[TFLOPS], errors="coerce").isna().sum())
    else:
        missing = len(ops)  # no row has a perf model
    return {
        "quantized_count": int(names.str.contains(QUANTIZED).sum()),
        "missing_perf_model_count": missing,
        **peaks(metadata),
    }
