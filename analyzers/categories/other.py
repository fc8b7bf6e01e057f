"""Other (and every key without its own module): sub-classified by name; for `other` itself
communication rows are removed and reported as skipped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from rooflens.analyzers.categories import scoring
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.prepare.manifest import CategoryMetadata

COMMUNICATION = ("all_reduce", "collective", "ncclkernel", "rccl", "broadcast", "allgather")
GRAPH = ("graph", "hipgraph", "cudagraph")
SKIPPED_MESSAGE = (
    "Communication kernels detected. Use TraceLens's NCCL Analyzer for detailed collective "
    "communication analysis (see TraceLens/NcclAnalyser/)."
)


def sub_category(name: str) -> str:
    lowered = name.lower()
    if any(word in lowered for word in COMMUNICATION):
        return "communication"
    return "graph" if any(word in lowered for word in GRAPH) else "miscellaneous"


def classify(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"sub_category": sub_category(str(row.get("name", "")))}


def analyse(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    category: str = "other",
    fusion_map: Mapping[str, str] | None = None,
) -> CategoryMetrics:
    """Score the rows; reads `name`. Only category `other` drops communication rows."""
    names = [str(n) for n in ops.get("name", pd.Series(dtype=str))]
    subs = [sub_category(n) for n in names]
    skipped: list[str] = []
    if category == "other":
        skipped = [n for n, s in zip(names, subs, strict=True) if s == "communication"]
        keep = [s != "communication" for s in subs]
        ops = ops.loc[keep]
        subs = [s for s in subs if s != "communication"]
    specific: dict[str, Any] = {
        "communication_count": subs.count("communication"),
        "graph_count": subs.count("graph"),
        "miscellaneous_count": subs.count("miscellaneous"),
        **scoring.peaks(metadata),
    }
    if skipped:
        specific["communication_ops_skipped"] = {
            "count": len(skipped),
            "op_names": skipped,
            "message": SKIPPED_MESSAGE,
        }
    return scoring.score(
        ops, metadata, category, classify=classify, fusion_map=fusion_map, specific=specific
    )
