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
from functools import cached_property
from itertools import pairwise

import numpy as np

from ..trace.columns import MISSING
from ..trace.model import TraceModel
from ..trace.tree import nearest_ancestor
from .call_tree import CallTree, call_tree

LCS_CELLS = 250_000  # beyond this the exact programme costs too much time (~0.05 s here)
MAX_EDITS = 600  # beyond this Myers's edit script costs too much (O(D^2) time and memory)
POLISH = 32  # pairs either side of an edit aligned again by the exact programme
WINDOW = 200  # names of each list aligned at once when they differ by too many edits
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
    """A longest common subsequence: by the exact programme up to `LCS_CELLS` cells; past
    that by Myers's shortest edit script (exact too) when the lists differ by at most
    `MAX_EDITS` insertions and deletions, else window by window (`_windowed`)."""
    if not a or not b:
        return []
    if len(a) * len(b) <= LCS_CELLS:
        return _exact(a, b)
    found = _late_matches(a, b)
    return _polished(a, b, found if found is not None else _windowed(a, b))


def _polished(a: list[str], b: list[str], pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`pairs` with the neighbourhood of every edit (`POLISH` pairs either side) aligned again
    by the exact programme: where several alignments are equally long, the one it picks
    (a renamed node between the same neighbours as its counterpart) is kept, so long lists
    pair as short ones do. A neighbourhood too large for it is left as it is."""
    edges = [(-1, -1), *pairs, (len(a), len(b))]
    edited = [
        k for k, ((i0, j0), (i1, j1)) in enumerate(pairwise(edges)) if i1 - i0 > 1 or j1 - j0 > 1
    ]
    if not edited:
        return pairs
    windows: list[list[int]] = []
    for k in edited:  # the edit lies between edges[k] and edges[k + 1]
        lo, hi = max(k - POLISH, 0), min(k + 1 + POLISH, len(edges) - 1)
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = hi
        else:
            windows.append([lo, hi])
    out: list[tuple[int, int]] = []
    last = 0  # the next edge not yet copied
    for lo, hi in windows:
        out += edges[max(last, 1) : lo + 1]
        (i0, j0), (i1, j1) = edges[lo], edges[hi]
        if (i1 - i0 - 1) * (j1 - j0 - 1) <= LCS_CELLS:
            out += [(i0 + 1 + i, j0 + 1 + j) for i, j in _exact(a[i0 + 1 : i1], b[j0 + 1 : j1])]
        else:
            out += edges[lo + 1 : hi]
        last = hi
    out += edges[max(last, 1) : len(edges) - 1]
    return out


def _late_matches(a: list[str], b: list[str]) -> list[tuple[int, int]] | None:
    """Myers's pairs with each unmatched node as early as its run of equal names allows, as
    the exact programme places them (it walks back from the ends): so a renamed node meets
    its counterpart between the same neighbours. Myers's greedy walk matches as early as it
    can, so it walks the reversed lists."""
    n, m = len(a), len(b)
    found = _myers(a[::-1], b[::-1], MAX_EDITS)
    return None if found is None else [(n - 1 - i, m - 1 - j) for i, j in reversed(found)]


def _myers(a: list[str], b: list[str], max_d: int) -> list[tuple[int, int]] | None:
    """The pairs of a shortest edit script (E. Myers, "An O(ND) difference algorithm", 1986):
    per number of edits d, the furthest point reached on each diagonal; None past `max_d`
    edits. Time O((N + M) + D^2) on lists that differ by D, memory O(D^2)."""
    n, m = len(a), len(b)
    off = max_d + 1
    v = [0] * (2 * off + 1)
    history: list[list[int]] = []
    for d in range(max_d + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]
            else:
                x = v[off + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            v[off + k] = x
            if x >= n and y >= m:
                return _myers_pairs(history, n, m, d)
        history.append(v[off - d : off + d + 1])
    return None


def _myers_pairs(history: list[list[int]], x: int, y: int, d: int) -> list[tuple[int, int]]:
    """Walk a shortest edit script back from the end: the diagonal runs are the pairs."""
    pairs: list[tuple[int, int]] = []
    for step in range(d, 0, -1):
        prev, base = history[step - 1], step - 1
        k = x - y
        down = k == -step or (k != step and prev[k - 1 + base] < prev[k + 1 + base])
        before = k + 1 if down else k - 1
        px = prev[before + base]
        mid_x = px if down else px + 1
        while x > mid_x:
            x, y = x - 1, y - 1
            pairs.append((x, y))
        x, y = px, px - before
    pairs.extend((i, i) for i in range(x - 1, -1, -1))
    return pairs[::-1]


def _exact(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """Classic dynamic programme; a tie is broken walking back from the ends, skipping trace
    1's node first."""
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


def _windowed(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """A common subsequence of long lists that differ by many edits, in linear time: the
    exact programme over a window of `WINDOW` names of each list from where the pairs so far
    end, three quarters of its pairs kept, and on from the last kept (equal runs paired in
    one pass). Each pair is the longest common subsequence's locally, not always globally."""
    n, m = len(a), len(b)
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        while i < n and j < m and a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        if i == n or j == m:
            break
        local = _exact(a[i : i + WINDOW], b[j : j + WINDOW])
        if not local:  # nothing in common here: on past half of each window
            i, j = i + WINDOW // 2, j + WINDOW // 2
            continue
        last_window = i + WINDOW >= n and j + WINDOW >= m
        kept = local if last_window else local[: max(1, 3 * len(local) // 4)]
        pairs += [(i + x, j + y) for x, y in kept]
        i, j = i + kept[-1][0] + 1, j + kept[-1][1] + 1
    return pairs
