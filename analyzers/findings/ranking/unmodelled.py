"""Which operations have a usable roofline, and why the others do not
(docs/analysis.md#unquantified-items).

An operation is modelled when it has a roofline efficiency that is not anomalous (at most
110 % of its roof, every instance included): only those feed a measured saving. The others say
why: the perf report's `unmodelled_reason` when the model stated one (what the trace did not
record), else what the metrics show (an anomalous efficiency, no shapes, no model).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ...categories.models import Operation
from ...markdown_text import md_code
from ...perf.base import (
    NO_BACKWARD_MODEL,
    NO_MODEL,
    SHAPES_NOT_RECORDED,
    TENSOR_LIST_WITHOUT_SHAPES,
)
from ...perf.platform_choice import NO_PLATFORM_REASON

ANOMALOUS = "above 110 % of its roofline, so its model or timing is suspect"
NO_SHAPES = "its input shapes were not recorded, so its FLOPs and bytes are unknown"


# reasons rooflens words itself (the constants, and a model's `Unrecorded` phrase naming the
# arguments it needs); any other is a perf model's message, which may quote the trace (a
# dtype, a concrete input), so Markdown shows it as a code span
OWN_REASONS = frozenset(
    {NO_MODEL, NO_BACKWARD_MODEL, SHAPES_NOT_RECORDED, TENSOR_LIST_WITHOUT_SHAPES,
     NO_PLATFORM_REASON, ANOMALOUS, NO_SHAPES}
)  # fmt: skip
_UNRECORDED = re.compile(r"[A-Za-z0-9_/,. -]+ not recorded \(no Concrete Inputs\)")


def own_reason(reason: str) -> bool:
    return reason in OWN_REASONS or _UNRECORDED.fullmatch(reason) is not None


def reason_md(reason: str) -> str:
    """One reason (or '; '-joined reasons) as Markdown: rooflens's own words as they are,
    a perf model's message as a code span (docs/analysis.md#trace-text-in-markdown)."""
    parts = reason.split("; ")
    return "; ".join(p if own_reason(p) else md_code(p, limit=200) for p in parts)


def modelled(op: Operation) -> bool:
    return op.efficiency.efficiency_percent is not None and not op.efficiency.is_anomaly


def unmodelled_reason(op: Operation) -> str:
    """Why `op` has no usable roofline, in words."""
    stated = op.unmodelled_reason
    if isinstance(stated, str) and stated:
        return stated
    if op.efficiency.is_anomaly:
        return ANOMALOUS
    dims = op.input_dims
    if not isinstance(dims, list) or not any(isinstance(d, list) and d for d in dims):
        return NO_SHAPES
    return NO_MODEL


def reasons(ops: Iterable[Operation]) -> str:
    """The distinct reasons of the unmodelled `ops`, in first-seen order, joined by '; '."""
    found = dict.fromkeys(unmodelled_reason(op) for op in ops if not modelled(op))
    return "; ".join(found) or NO_MODEL
