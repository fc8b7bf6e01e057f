"""Which operations have a usable roofline, and why the others do not
(docs/analysis.md#unquantified-items).

An operation is modelled when it has a roofline efficiency that is not anomalous (at most
110 % of its roof, every instance included): only those feed a measured saving. The others say
why: the perf report's `unmodelled_reason` when the model stated one (what the trace did not
record), else what the metrics show (an anomalous efficiency, no shapes, no model).
"""

from __future__ import annotations

from collections.abc import Iterable

from rooflens.analyzers.categories.models import Operation
from rooflens.analyzers.perf.base import NO_MODEL

ANOMALOUS = "above 110 % of its roofline, so its model or timing is suspect"
NO_SHAPES = "its input shapes were not recorded, so its FLOPs and bytes are unknown"


def modelled(op: Operation) -> bool:
    return op.efficiency.efficiency_percent is not None and not op.efficiency.is_anomaly


def unmodelled_reason(op: Operation) -> str:
    """Why `op` has no usable roofline, in words."""
    stated = op.get("unmodelled_reason")
    if isinstance(stated, str) and stated:
        return stated
    if op.efficiency.is_anomaly:
        return ANOMALOUS
    dims = op.get("Input Dims")
    if not isinstance(dims, list) or not any(isinstance(d, list) and d for d in dims):
        return NO_SHAPES
    return NO_MODEL


def reasons(ops: Iterable[Operation]) -> str:
    """The distinct reasons of the unmodelled `ops`, in first-seen order, joined by '; '."""
    found = dict.fromkeys(unmodelled_reason(op) for op in ops if not modelled(op))
    return "; ".join(found) or NO_MODEL
