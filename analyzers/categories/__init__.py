"""Compute-category analyses: each scores one category's rows of the unified table against
its platform's roofline and returns its metrics document (docs/analysis.md). Pure: the
pipeline hands them the prepared category data in memory."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .. import layout
from ..prepare.document_base import ComparisonScope
from ..prepare.manifest import CategoryMetadata
from . import (
    conv,
    elementwise,
    gemm,
    moe,
    norm,
    other,
    reduce,
    scoring,
    sdpa,
)
from . import triton as triton_category
from .models import (
    CategoryMetrics,
    error_metrics,
    no_data_metrics,
)

Specific = Callable[[pd.DataFrame, CategoryMetadata], dict[str, Any]]


@dataclass(frozen=True)
class Category:
    """A manifest key and what its analysis adds to the shared scoring: the specifics of its
    `category_specific`, extra operation fields, a per-row classifier, the rows it scores.
    `no_data_if_missing` gives NO_DATA (not ERROR) when the run has no such category."""

    key: str
    specific: Specific
    fields: tuple[str, ...] = scoring.BASE_FIELDS
    classify: scoring.Classifier | None = None
    select: Callable[[pd.DataFrame], pd.DataFrame] | None = None
    no_data_if_missing: bool = False

    def analyze(
        self,
        ops: pd.DataFrame,
        metadata: CategoryMetadata,
        fusion_map: Mapping[str, str],
        scope: ComparisonScope = "standalone",
    ) -> CategoryMetrics:
        scored = self.select(ops) if self.select else ops
        specific = self.specific(scored, metadata)
        if self.select is not None:
            specific |= other.skipped(ops, scored)
        return scoring.score(
            scored,
            metadata,
            self.key,
            extra_fields=self.fields,
            classify=self.classify,
            fusion_map=fusion_map,
            specific=specific,
            scope=scope,
        )


_GEMM = {"specific": gemm.specific, "fields": gemm.FIELDS, "classify": gemm.classify}
_SDPA = {"specific": sdpa.specific, "fields": sdpa.FIELDS, "classify": sdpa.classify}
_NORM = {"specific": norm.specific}
_CONV = {"specific": conv.specific}
_MOE = {"specific": moe.specific, "no_data_if_missing": True}
_OTHER = {"specific": other.specific, "classify": other.classify}

# The order is explicit, as in sqlglot's RULES. Every other compute key is scored as `other`
# is, without leaving out the communication rows.
CATEGORIES = (
    Category("gemm", **_GEMM),
    Category("groupedgemm_fwd", **_GEMM),
    Category("groupedgemm_bwd", **_GEMM),
    Category("sdpa_fwd", **_SDPA),
    Category("sdpa_bwd", **_SDPA),
    Category("inferenceattention", **_SDPA),
    Category("elementwise", elementwise.specific, elementwise.FIELDS),
    Category("reduce", reduce.specific),
    Category("triton", triton_category.specific, classify=triton_category.classify),
    Category("norm_fwd", **_NORM),
    Category("norm_bwd", **_NORM),
    Category("rmsnorm", **_NORM),
    Category("norm", **_NORM),
    Category("conv_fwd", **_CONV),
    Category("conv_bwd", **_CONV),
    Category("convolution", **_CONV),
    Category("moe_fused", **_MOE),
    Category("moe_unfused", **_MOE),
    Category("other", **_OTHER, select=other.without_communication),
)
KEY_PATTERN = re.compile(r"[a-z0-9_]+")
BY_KEY = {c.key: c for c in CATEGORIES}


def category_for(key: str) -> Category | None:
    """The analysis for a manifest key: its own module, else the generic one; None when the key
    is a system category or not a manifest key at all."""
    if key in layout.SYSTEM_KEYS or not KEY_PATTERN.fullmatch(key):
        return None
    return BY_KEY.get(key, Category(key, **_OTHER))


def analyze_category(
    key: str,
    ops: pd.DataFrame | None,
    metadata: CategoryMetadata | None,
    fusion_map: Mapping[str, str],
    scope: ComparisonScope = "standalone",
) -> CategoryMetrics:
    """One compute category's analysis (docs/analysis.md#compute-categories). Never raises on
    bad input: an unknown key or missing rows give an ERROR document (MoE: NO_DATA).
    `fusion_map` is kernel fusion's high-confidence kernel -> candidate map; `scope`
    comparative scores the rows against trace 2's time (docs/compare.md)."""
    category = category_for(key)
    if category is None:
        return error_metrics(key, f"'{key}' is not a compute category of this run")
    if ops is None or metadata is None:
        if category.no_data_if_missing:
            return no_data_metrics(key, moe.NO_DATA_MESSAGE).model_copy(
                update={"comparison_scope": scope}
            )
        return error_metrics(key, f"the run has no operations in category '{key}'")
    return category.analyze(_blank_as_missing(ops), metadata, fusion_map, scope)


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
