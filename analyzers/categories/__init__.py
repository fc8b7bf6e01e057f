"""Compute-category analyses: each scores one category's rows of the unified table against
its platform's roofline and returns its metrics document (docs/analysis.md). Pure: the
pipeline hands them the prepared category data in memory."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pandas as pd

from rooflens.analyzers import layout
from rooflens.analyzers.categories import conv, elementwise, gemm, moe, norm, other, reduce, sdpa
from rooflens.analyzers.categories import triton as triton_category
from rooflens.analyzers.categories.models import (
    CategoryMetrics,
    error_metrics,
    no_data_metrics,
)
from rooflens.analyzers.prepare.manifest import CategoryMetadata

Analyse = Callable[..., CategoryMetrics]


@dataclass(frozen=True)
class Category:
    """A manifest key and its analysis; `no_data_if_missing` gives NO_DATA for a missing CSV."""

    key: str
    analyse: Analyse
    no_data_if_missing: bool = False


# The order is explicit, as in sqlglot's RULES. Every other compute key runs `other`.
CATEGORIES = (
    Category("gemm", gemm.analyse),
    Category("groupedgemm_fwd", gemm.analyse),
    Category("groupedgemm_bwd", gemm.analyse),
    Category("sdpa_fwd", sdpa.analyse),
    Category("sdpa_bwd", sdpa.analyse),
    Category("inferenceattention", sdpa.analyse),
    Category("elementwise", elementwise.analyse),
    Category("reduce", reduce.analyse),
    Category("triton", triton_category.analyse),
    Category("norm_fwd", norm.analyse),
    Category("norm_bwd", norm.analyse),
    Category("rmsnorm", norm.analyse),
    Category("norm", norm.analyse),
    Category("conv_fwd", conv.analyse),
    Category("conv_bwd", conv.analyse),
    Category("convolution", conv.analyse),
    Category("moe_fused", moe.analyse, no_data_if_missing=True),
    Category("moe_unfused", moe.analyse, no_data_if_missing=True),
    Category("other", other.analyse),
)
SYSTEM_KEYS = frozenset(layout.SYSTEM_KEYS)
KEY_PATTERN = re.compile(r"[a-z0-9_]+")
BY_KEY = {c.key: c for c in CATEGORIES}


def category_for(key: str) -> Category | None:
    """The analysis for a manifest key: its own module, else the generic one; None when the key
    is a system category or not a manifest key at all."""
    if key in SYSTEM_KEYS or not KEY_PATTERN.fullmatch(key):
        return None
    return BY_KEY.get(key, Category(key, other.analyse))


def analyze_category(
    key: str,
    ops: pd.DataFrame | None,
    metadata: CategoryMetadata | None,
    fusion_map: Mapping[str, str],
) -> CategoryMetrics:
    """One compute category's analysis (docs/analysis.md#compute-categories). Never raises on
    bad input: an unknown key or missing rows give an ERROR document (MoE: NO_DATA).
    `fusion_map` is kernel fusion's high-confidence kernel -> candidate map."""
    category = category_for(key)
    if category is None:
        return error_metrics(key, f"'{key}' is not a compute category of this run")
    if ops is None or metadata is None:
        if category.no_data_if_missing:
            return no_data_metrics(key, moe.NO_DATA_MESSAGE)
        return error_metrics(key, f"the run has no operations in category '{key}'")
    return category.analyse(_blank_as_missing(ops), metadata, category=key, fusion_map=fusion_map)


def _blank_as_missing(ops: pd.DataFrame) -> pd.DataFrame:
    """Empty text cells as missing values, as a CSV of the table reads back."""
    text = ops.select_dtypes(include=["object", "string"]).columns
    if text.empty:
        return ops
    return ops.assign(**{c: ops[c].mask(ops[c].eq("")) for c in text})


__all__ = [
    "CATEGORIES",
    "Category",
    "CategoryMetrics",
    "analyze_category",
    "category_for",
]
