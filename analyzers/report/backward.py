"""The "sole backward op" rule of rule B (docs/report-tables.md#rule-b-unified-ops).

A backward op with no model of its own (`ScaledDotProductFlashAttentionBackward0`) is scored
with its forward op's backward formula when it is the only op of its autograd node that
launches GPU work: the autograd node names it, and the forward op is linked by sequence
number.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from rooflens.analyzers.trace.columns import MISSING
from rooflens.analyzers.trace.model import TraceModel
from rooflens.analyzers.trace.tree import ancestors

AUTOGRAD_SEARCH_DEPTH = 5


class SoleBackward:
    """Finds, for a candidate op, the forward op whose backward pass it is (or -1)."""

    def __init__(
        self,
        model: TraceModel,
        names: np.ndarray,
        launches_work: np.ndarray,
        has_backward: Callable[[str], bool],
    ) -> None:
        self.parent = model.tree.parent
        self.fwd = model.autograd.fwd
        self.names = names
        self.has_backward = has_backward
        # the ops under each autograd node that launch GPU work, by name
        self.candidates: dict[int, list[int]] = {}
        for op in np.flatnonzero(launches_work).tolist():
            for up in ancestors(self.parent, op)[:AUTOGRAD_SEARCH_DEPTH]:
                if self.fwd[up] != MISSING:
                    self.candidates.setdefault(up, []).append(op)
                    break

    def forward_of(self, node: int) -> int:
        for up in ancestors(self.parent, node)[:AUTOGRAD_SEARCH_DEPTH]:
            fwd = int(self.fwd[up])
            if fwd == MISSING:
                continue
            if not self.has_backward(self.names[fwd]):
                return MISSING
            node_name = self.names[up].partition(": ")[2]
            same = [c for c in self.candidates.get(up, []) if self.names[c] == node_name]
            return fwd if same == [node] else MISSING
        return MISSING
