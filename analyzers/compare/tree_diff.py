"""Merge the call trees of two traces: shared nodes once, what differs as one-sided subtrees.

See docs/compare.md#how-nodes-are-matched.

Children of a matched pair are aligned by name with a longest common subsequence (order
kept). A node left unmatched that holds, somewhere below it, a name left unmatched on the
other side is opened: its children take its place and the alignment is redone, so an operator
that moved down a level (a vendor wrapper around the same call) still matches. A lone
unmatched operator on each side between the same neighbours is a rename and pairs. The merged
tree is a set of integer columns in pre-order: node i pairs `uid1[i]` and `uid2[i]` (-1 on the
side it is missing from), so `lca[i]` of a one-sided node is its nearest matched operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cached_property
from itertools import pairwise

import numpy as np

from ..trace.columns import MISSING
from ..trace.model import TraceModel
from ..trace.tree import nearest_ancestor
from .call_tree import CallTree, call_tree

LCS_CELLS = 4_000_000  # beyond this the exact alignment costs too much memory and time
Pairing = tuple[list[tuple[int, int]], list[int], list[int]]


@dataclass(frozen=True)
class TreeDiff:
    """The merged tree of trace 1 and trace 2, one row per merged node in pre-order."""

    tree1: CallTree
    tree2: CallTree
    uid1: np.ndarray
    uid2: np.ndarray
    parent: np.ndarray  # merged id of the parent node, -1 at the top
    depth: np.ndarray

    @property
    def matched(self) -> np.ndarray:
        return (self.uid1 != MISSING) & (self.uid2 != MISSING)

    @cached_property
    def lca(self) -> np.ndarray:
        """Per merged node: its nearest matched operator, itself included (-1 when a whole
        top-level subtree is one-sided). A matched launch call is skipped: it says nothing
        about which operator differs (docs/compare.md#how-nodes-are-matched)."""
        nodes = np.arange(len(self.uid1))
        operator = self.matched & self.tree1.renamable[np.maximum(self.uid1, 0)]
        above = nearest_ancestor(self.parent, operator, nodes)
        return np.where(operator, nodes, above)

    def name(self, node: int) -> str:
        """The node's name; a renamed pair shows both, `aten::mm | aten::addmm`."""
        one, two = self.uid1[node], self.uid2[node]
        name1 = str(self.tree1.names[one]) if one != MISSING else None
        name2 = str(self.tree2.names[two]) if two != MISSING else None
        if name1 is None or name2 is None or name1 == name2:
            return name1 or name2 or ""
        return f"{name1} | {name2}"


def diff_traces(model1: TraceModel, model2: TraceModel, *, python_frames: bool = False) -> TreeDiff:
    """Merge the call trees of two traces (trace 1 is the one being optimised)."""
    return merge_trees(
        call_tree(model1, python_frames=python_frames),
        call_tree(model2, python_frames=python_frames),
    )


def merge_trees(tree1: CallTree, tree2: CallTree) -> TreeDiff:
    """Walk both trees from their top-level nodes, pairing children as the module says."""
    uid1: list[int] = []
    uid2: list[int] = []
    parent: list[int] = []
    depth: list[int] = []
    top = _ordered(pair_children(tree1, tree2, tree1.roots.tolist(), tree2.roots.tolist()))
    stack = [(a, b, MISSING, 0) for a, b in reversed(top)]
    while stack:
        a, b, up, level = stack.pop()
        node = len(uid1)
        uid1.append(a)
        uid2.append(b)
        parent.append(up)
        depth.append(level)
        below = _children_of(tree1, tree2, a, b)
        stack.extend((x, y, node, level + 1) for x, y in reversed(below))
    as_array = np.asarray
    return TreeDiff(
        tree1,
        tree2,
        as_array(uid1, dtype=np.int64),
        as_array(uid2, dtype=np.int64),
        as_array(parent, dtype=np.int64),
        as_array(depth, dtype=np.int64),
    )


def _children_of(tree1: CallTree, tree2: CallTree, a: int, b: int) -> list[tuple[int, int]]:
    if a != MISSING and b != MISSING:
        kids1, kids2 = tree1.children(a).tolist(), tree2.children(b).tolist()
        return _ordered(pair_children(tree1, tree2, kids1, kids2))
    if a != MISSING:
        return [(x, MISSING) for x in tree1.children(a).tolist()]
    return [(MISSING, y) for y in tree2.children(b).tolist()]


def _ordered(pairing: Pairing) -> list[tuple[int, int]]:
    """Matched pairs first, then trace 1's unmatched nodes, then trace 2's."""
    pairs, only1, only2 = pairing
    return pairs + [(x, MISSING) for x in only1] + [(MISSING, y) for y in only2]


def pair_children(tree1: CallTree, tree2: CallTree, kids1: list[int], kids2: list[int]) -> Pairing:
    """Align two sibling lists by name, opening unmatched nodes that hide a match below
    them, then pairing lone renames (docs/compare.md#how-nodes-are-matched)."""
    while True:
        names1 = [str(n) for n in tree1.names[kids1]] if kids1 else []
        names2 = [str(n) for n in tree2.names[kids2]] if kids2 else []
        pairs = align(names1, names2)
        taken1 = {i for i, _ in pairs}
        taken2 = {j for _, j in pairs}
        loose1 = {n for i, n in enumerate(names1) if i not in taken1}
        loose2 = {n for j, n in enumerate(names2) if j not in taken2}
        opened1 = _open(tree1, kids1, taken1, loose2)
        opened2 = _open(tree2, kids2, taken2, loose1)
        if opened1 is None and opened2 is None:
            return _with_renames(tree1, tree2, kids1, kids2, pairs)
        kids1 = kids1 if opened1 is None else opened1
        kids2 = kids2 if opened2 is None else opened2


def _open(tree: CallTree, kids: list[int], taken: set[int], wanted: set[str]) -> list[int] | None:
    """`kids` with every unmatched node that holds a node named in `wanted` below it replaced
    by its children; None when no node qualifies."""
    out: list[int] = []
    changed = False
    for i, kid in enumerate(kids):
        if i not in taken and _holds_name(tree, kid, wanted):
            out.extend(tree.children(kid).tolist())
            changed = True
        else:
            out.append(kid)
    return out if changed else None


def _holds_name(tree: CallTree, uid: int, wanted: set[str]) -> bool:
    """Does any node below `uid` (GPU-path nodes only) have a name in `wanted`?"""
    if not wanted:
        return False
    pending = tree.children(uid).tolist()
    names = tree.names
    while pending:
        node = pending.pop()
        if str(names[node]) in wanted:
            return True
        pending.extend(tree.children(node).tolist())
    return False


def _with_renames(
    tree1: CallTree,
    tree2: CallTree,
    kids1: list[int],
    kids2: list[int],
    pairs: list[tuple[int, int]],
) -> Pairing:
    """Turn the alignment into node pairs; between two aligned neighbours, a lone unmatched
    operator on each side is paired too (an `aten::mm` where the other trace has an
    `aten::addmm`): a renamed node, not a difference of structure."""
    bounds = [(-1, -1), *pairs, (len(kids1), len(kids2))]
    matched: list[tuple[int, int]] = []
    only1: list[int] = []
    only2: list[int] = []
    for (i0, j0), (i1, j1) in pairwise(bounds):
        gap1, gap2 = kids1[i0 + 1 : i1], kids2[j0 + 1 : j1]
        if len(gap1) == len(gap2) == 1 and tree1.renamable[gap1[0]] and tree2.renamable[gap2[0]]:
            matched.append((gap1[0], gap2[0]))
        else:
            only1 += gap1
            only2 += gap2
        if i1 < len(kids1):
            matched.append((kids1[i1], kids2[j1]))
    return matched, only1, only2


def align(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two name lists (equal ends are taken
    first, so identical lists cost one pass)."""
    lo = 0
    while lo < len(a) and lo < len(b) and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < len(a) - lo and hi < len(b) - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    middle = _lcs(a[lo : len(a) - hi], b[lo : len(b) - hi])
    head = [(i, i) for i in range(lo)]
    body = [(lo + i, lo + j) for i, j in middle]
    tail = [(len(a) - hi + k, len(b) - hi + k) for k in range(hi)]
    return head + body + tail


def _lcs(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Classic dynamic programme; a tie is broken walking back from the ends, skipping trace
    1's node first. Past `LCS_CELLS` cells, difflib's matching blocks stand in."""
    if not a or not b:
        return []
    if len(a) * len(b) > LCS_CELLS:
        blocks = SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        return [(i + k, j + k) for i, j, size in blocks for k in range(size)]
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, name in enumerate(a, 1):
        row, above = rows[i], rows[i - 1]
        for j, other in enumerate(b, 1):
            row[j] = above[j - 1] + 1 if name == other else max(above[j], row[j - 1])
    pairs = []
    i, j = len(a), len(b)
    while i and j:
        if a[i - 1] == b[j - 1]:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif rows[i - 1][j] >= rows[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]
