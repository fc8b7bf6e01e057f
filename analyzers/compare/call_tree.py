"""One trace's call tree as the tree diff sees it: host operators, launches and GPU work.

See docs/compare.md#the-trees-compared.

Built from the model's `parent` column: Python frames are skipped unless asked for (their
operators then hang under the nearest operator above), and a node's children are only those
with GPU work at or below them, in start order, as one CSR index (no per-node objects).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..trace.columns import MISSING
from ..trace.model import TraceModel
from ..trace.schema import GPU_CATEGORIES
from ..trace.tree import nearest_ancestor

OPERATOR_CATEGORIES = ("cpu_op", "cuda_runtime", "cuda_driver")
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
PYTHON_CATEGORY = "python_function"


@dataclass(frozen=True)
class CallTree:
    """`children(uid)` are the GPU-path children of a node in start order; `roots` every
    top-level operator (or Python frame) of the diff tree, with or without GPU work, in start
    order (a runtime call outside any operator is not a root)."""

    model: TraceModel
    names: np.ndarray  # event name per uid as the merge compares it (see `match_names`)
    parent: np.ndarray  # parent within the diff tree, -1 at the top
    is_gpu: np.ndarray  # per uid: a kernel, copy or memset
    renamable: np.ndarray  # per uid: an operator or Python frame (not a launch, not GPU work)
    roots: np.ndarray
    child_start: np.ndarray  # CSR offsets per uid into child_uids (len = events + 1)
    child_uids: np.ndarray

    def children(self, uid: int) -> np.ndarray:
        return self.child_uids[self.child_start[uid] : self.child_start[uid + 1]]


def call_tree(model: TraceModel, *, python_frames: bool = False) -> CallTree:
    """The tree of `model` the merge walks: operators, launches and GPU events, plus Python
    frames when `python_frames` (TraceLens builds it that way when call stacks are kept)."""
    events = model.events
    cat = events["cat"].astype(str).to_numpy()
    kept = OPERATOR_CATEGORIES + ((PYTHON_CATEGORY,) if python_frames else ())
    is_gpu = np.isin(cat, list(GPU_CATEGORIES))
    is_host = np.isin(cat, list(kept))
    in_tree = is_gpu | is_host
    everyone = np.arange(len(events))
    parent = np.full(len(events), MISSING, dtype=np.int64)
    parent[in_tree] = nearest_ancestor(model.tree.parent, in_tree, everyone[in_tree])
    on_path = _gpu_path(parent, np.flatnonzero(is_gpu & (parent != MISSING)))
    start = events["ts"].to_numpy()
    top_kinds = ["cpu_op", PYTHON_CATEGORY] if python_frames else ["cpu_op"]
    is_top = np.isin(cat, top_kinds) & (parent == MISSING)
    roots = everyone[is_top & ~np.isin(everyone, model.tree.dropped)]
    roots = roots[np.argsort(start[roots], kind="stable")]
    linked = np.flatnonzero(on_path & (parent != MISSING))
    linked = linked[np.lexsort((linked, start[linked], parent[linked]))]
    counts = np.bincount(parent[linked], minlength=len(events))
    child_start = np.concatenate(([0], np.cumsum(counts)))
    renamable = np.isin(cat, ["cpu_op", PYTHON_CATEGORY])
    names = match_names(model) if python_frames else model.names
    return CallTree(model, names, parent, is_gpu, renamable, roots, child_start, linked)


def match_names(model: TraceModel) -> np.ndarray:
    """Names with the object address of a built-in method frame removed
    (`<built-in method to of Tensor object at 0x7f72809f2990>`): the address differs from run
    to run, so without this the frame never matches its twin. Done once per distinct name."""
    cells = model.events["name"].array
    table = [ADDRESS.sub("", text) for text in cells.categories]
    return np.append(np.asarray(table, dtype=object), None)[cells.codes]


def _gpu_path(parent: np.ndarray, gpu: np.ndarray) -> np.ndarray:
    """True for every GPU event and every ancestor of one (a level-by-level pointer walk)."""
    marked = np.zeros(len(parent), dtype=bool)
    frontier = gpu
    while len(frontier):
        marked[frontier] = True
        frontier = np.unique(parent[frontier])
        frontier = frontier[(frontier != MISSING)]
        frontier = frontier[~marked[frontier]]
    return marked
