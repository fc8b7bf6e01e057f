"""Other (and every key without its own module): sub-classified by name; for `other` itself
communication rows are removed and reported as skipped."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..prepare.manifest import CategoryMetadata
from .op_row import OpRow, op_names
from .scoring import peaks

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


def classify(row: OpRow) -> dict[str, Any]:
    return {"sub_category": sub_category(row.name or "")}


def without_communication(ops: pd.DataFrame) -> pd.DataFrame:
    """The rows the `other` category scores: communication kernels have their own analysis."""
    return ops.loc[[sub_category(n) != "communication" for n in op_names(ops)]]


def specific(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """Sub-category counts of the rows scored; reads `name`."""
    subs = [sub_category(n) for n in op_names(ops)]
    return {
        "communication_count": subs.count("communication"),
        "graph_count": subs.count("graph"),
        "miscellaneous_count": subs.count("miscellaneous"),
        **peaks(metadata),
    }


def skipped(all_rows: pd.DataFrame, scored: pd.DataFrame) -> dict[str, Any]:
    """The communication rows left out of `other`, as its `category_specific` reports them."""
    names = op_names(all_rows.loc[~all_rows.index.isin(scored.index)])
    if not names:
        return {}
    return {
        "communication_ops_skipped": {
            "count": len(names),
            "op_names": names,
            "message": SKIPPED_MESSAGE,
        }
    }
