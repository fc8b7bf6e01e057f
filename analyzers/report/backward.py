"""The "sole backward op" rule of rule B (docs/report-tables.md#rule-b-unified-ops).

A backward op with no model of its own (`ScaledDotProductFlashAttentionBackward0`) is scored
with its forward op's backward formula when it is the only op of its autograd node that
launches GPU work: the autograd node names it, and the forward op is linked by sequence
number. Computed for every op at once, as columns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..trace.columns import MISSING
from ..trace.model import TraceModel

AUTOGRAD_SEARCH_DEPTH = 5


def autograd_node(parent: np.ndarray, fwd: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """Per op, the nearest of its first AUTOGRAD_SEARCH_DEPTH ancestors that is a backward
    autograd node (it has a forward op), or -1."""
    node = np.full(len(ops), MISSING, dtype=np.int64)
    position, current = np.arange(len(ops)), parent[ops]
    for _ in range(AUTOGRAD_SEARCH_DEPTH):
        alive = current != MISSING
        position, current = position[alive], current[alive]
        hit = fwd[current] != MISSING
        node[position[hit]] = current[hit]
        position, current = position[~hit], parent[current[~hit]]
    return node


def sole_backward(
    model: TraceModel, launches_work: np.ndarray, has_backward: Callable[[str], bool]
) -> np.ndarray:
    """`forward[uid]`: for an op that launches GPU work and is its autograd node's sole op of
    the node's name, the forward op whose backward formula scores it; -1 elsewhere."""
    names = model.events["name"].array
    codes = np.asarray(names.codes, dtype=np.int64)
    fwd = model.autograd.fwd
    ops = np.flatnonzero(launches_work)
    node = autograd_node(model.tree.parent, fwd, ops)
    ops, node = ops[node != MISSING], node[node != MISSING]
    forward = fwd[node]
    # the autograd node "autograd::engine::evaluate_function: X" names its op X
    code_of = {str(name): code for code, name in enumerate(names.categories)}
    unique_nodes = np.unique(codes[node])
    named = np.full(len(names.categories) + 1, -2, dtype=np.int64)  # -2: matches no op
    for c in unique_nodes[unique_nodes >= 0]:
        named[c] = code_of.get(str(names.categories[c]).partition(": ")[2], -2)
    same = codes[ops] == named[codes[node]]
    modelled = np.zeros(len(names.categories) + 1, dtype=bool)
    for c in np.unique(codes[forward]):
        modelled[c] = c >= 0 and has_backward(str(names.categories[c]))
    ops, node, forward = ops[same], node[same], forward[same]
    sole = np.bincount(node, minlength=len(fwd))[node] == 1
    out = np.full(len(fwd), MISSING, dtype=np.int64)
    keep = sole & modelled[codes[forward]]
    out[ops[keep]] = forward[keep]
    return out
