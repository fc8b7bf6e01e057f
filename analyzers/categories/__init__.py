"""Compute-category analyses (agent_workflow.md §3): read a run folder's
`category_data/<key>_ops.csv` + `metadata/<key>_metadata.json`, score, and write
`category_data/<key>_metrics.json`. Only this module touches files; the analyses are pure."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rooflens.analyzers.categories import conv, elementwise, gemm, moe, norm, other, reduce, sdpa
from rooflens.analyzers.categories import triton as triton_category
from rooflens.analyzers.categories.models import (
    CategoryMetrics,
    error_metrics,
    no_data_metrics,
)
from rooflens.analyzers.report.write_csv import atomic_write_bytes

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
SYSTEM_KEYS = frozenset({"cpu_idle", "multi_kernel", "kernel_fusion"})
KEY_PATTERN = re.compile(r"[a-z0-9_]+")
BY_KEY = {c.key: c for c in CATEGORIES}


def category_for(key: str) -> Category | None:
    """The analysis for a manifest key: its own module, else the generic one; None when the key
    is a system category or not a manifest key at all."""
    if key in SYSTEM_KEYS or not KEY_PATTERN.fullmatch(key):
        return None
    return BY_KEY.get(key, Category(key, other.analyse))


def fusion_map(run_dir: Path) -> dict[str, str]:
    """`high_confidence_kernel_map` of the kernel-fusion metrics (kernel → candidate), or {}."""
    path = Path(run_dir) / "category_data" / "kernel_fusion_metrics.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    found = data.get("high_confidence_kernel_map") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def read_inputs(run_dir: Path, key: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The category CSV (structured cells stay JSON text) and its metadata."""
    run_dir = Path(run_dir)
    ops = pd.read_csv(run_dir / "category_data" / f"{key}_ops.csv")
    metadata = json.loads((run_dir / "metadata" / f"{key}_metadata.json").read_text("utf-8"))
    if not isinstance(metadata, Mapping):
        raise ValueError(f"metadata/{key}_metadata.json is not a JSON object")
    return ops, dict(metadata)


def analyze_category(run_dir: Path, key: str) -> CategoryMetrics:
    """§3.2 for one compute category. Never raises on bad input: an unknown key or a missing
    or unreadable input gives an ERROR document (MoE: NO_DATA when its CSV is absent)."""
    category = category_for(key)
    if category is None:
        return error_metrics(key, f"'{key}' is not a compute category of this run")
    csv = Path(run_dir) / "category_data" / f"{key}_ops.csv"
    if category.no_data_if_missing and not csv.is_file():
        return no_data_metrics(key, moe.NO_DATA_MESSAGE)
    try:
        ops, metadata = read_inputs(run_dir, key)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        return error_metrics(key, f"{type(exc).__name__}: {exc}")
    return category.analyse(ops, metadata, category=key, fusion_map=fusion_map(run_dir))


def write_metrics(run_dir: Path, metrics: CategoryMetrics) -> Path:
    """Write `category_data/<category>_metrics.json` atomically; returns its path."""
    path = Path(run_dir) / "category_data" / f"{metrics.category}_metrics.json"
    text = json.dumps(metrics.document(), indent=2, ensure_ascii=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))
    return path


__all__ = [
    "CATEGORIES",
    "Category",
    "CategoryMetrics",
    "analyze_category",
    "category_for",
    "write_metrics",
]
