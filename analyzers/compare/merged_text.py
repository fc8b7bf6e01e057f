"""The merged call tree as indented text (TraceLens's `merged_tree_output.txt` layout).

See docs/compare.md#the-merged-tree-as-text. Matched nodes print once; a node of one trace
only prints with `>> trace1: ` or `<< trace2: ` before its name.
"""

from __future__ import annotations

import numpy as np

from ..trace.columns import MISSING
from .tree_diff import TreeDiff

SIDE_MARK = {1: ">> trace1: ", 2: "<< trace2: "}


def merged_tree_text(diff: TreeDiff) -> str:
    """One line per merged node in pre-order, with box-drawing branches."""
    last = _is_last_child(diff.parent)
    lines = []
    open_branches: list[bool] = []  # per depth above the node: does that ancestor continue?
    for node in range(len(diff.uid1)):
        level = int(diff.depth[node])
        del open_branches[level:]
        indent = "".join("│   " if more else "    " for more in open_branches)
        branch = "└── " if last[node] else "├── "
        lines.append(f"{indent}{branch}{_mark(diff, node)}{diff.name(node)}")
        open_branches.append(not last[node])
    return "\n".join(lines) + ("\n" if lines else "")


def _mark(diff: TreeDiff, node: int) -> str:
    if diff.uid2[node] == MISSING:
        return SIDE_MARK[1]
    if diff.uid1[node] == MISSING:
        return SIDE_MARK[2]
    return ""


def _is_last_child(parent: np.ndarray) -> np.ndarray:
    """True for the last node (in pre-order) among those sharing a parent."""
    last_of: dict[int, int] = {}
    for node, up in enumerate(parent.tolist()):
        last_of[up] = node
    last = np.zeros(len(parent), dtype=bool)
    last[list(last_of.values())] = True
    return last
