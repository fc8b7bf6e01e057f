"""Rule B: which op owns each kernel in `unified_perf_summary`.

See docs/report-tables.md#rule-b-unified-ops.

Walking down from the roots, an op with a perf model is taken whole; an op with modelled ops
below it is looked through; a leaf op (one that launches through runtime calls and Python
frames only) is taken as it is. Kernels left over become one synthetic op each, named
`<nearest cpu_op>-><kernel> (Synthetic Op)`, or after their launch call when no op is above.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.columns import MISSING, name_matches
from ..trace.model import TraceModel
from ..trace.tree import ancestors, nearest_ancestor
from .backward import sole_backward
from .launchers import subtree_pairs

LEAF_SEARCH_DEPTH = 10
SYNTHETIC = "{owner}->{kernel} (Synthetic Op)"


@dataclass(frozen=True)
class UnifiedOps:
    """`ops`: one row per attributed op instance; `kernels`: (op row, GPU event) pairs."""

    ops: pd.DataFrame  # columns: uid, name, source_uid, synthetic, backward, model_uid
    kernels: pd.DataFrame  # columns: op (row position in ops), gpu (uid)


def _leaf_ops(model: TraceModel, gpu_uids: np.ndarray) -> np.ndarray:
    """cpu_ops that reach a GPU event through runtime calls and Python frames only."""
    ev = model.events
    cat = ev["cat"]
    passable = cat.isin(["cuda_runtime", "python_function"]).to_numpy()
    is_cpu_op = (cat == "cpu_op").to_numpy()
    parent = model.tree.parent
    leaf = np.zeros(len(ev), dtype=bool)
    current = parent[gpu_uids]
    current = current[current != MISSING]
    current = current[passable[current]]  # cuda_driver launches do not count (TraceLens)
    for _ in range(LEAF_SEARCH_DEPTH):
        current = parent[current]
        current = current[current != MISSING]
        leaf[current[is_cpu_op[current]]] = True
        current = current[passable[current]]
        if not len(current):
            break
    return leaf


def attribute_unified(
    model: TraceModel,
    has_model: Callable[[str], bool],
    has_backward: Callable[[str], bool] | None = None,
) -> UnifiedOps:
    """Collect the ops of the unified table and turn leftover kernels into synthetic ops.

    `has_backward` (an op name -> its model defines a backward pass) enables the sole
    backward rule; such rows carry `model_uid` = the forward op and `backward` = True.
    """
    f = _facts(model, has_model, has_backward)
    collected, backward = _collect(model, f)
    is_collected = np.zeros(len(f.host), dtype=bool)
    is_collected[collected] = True
    own = f.pairs[is_collected[f.pairs["ancestor"].to_numpy()]]
    forward = np.full(len(f.host), MISSING, dtype=np.int64)
    forward[backward] = f.forward[backward]
    if len(backward):
        own = pd.concat([own, _backward_kernels(model, f, backward)]).drop_duplicates()
    covered = np.zeros(len(f.host), dtype=bool)
    covered[own["node"].to_numpy()] = True
    gpu_uids = f.gpu_uids
    orphans = gpu_uids[~covered[gpu_uids] & ~f.is_comm[gpu_uids]]
    owner = model.launcher[orphans]
    owner = np.where(owner != MISSING, owner, model.tree.parent[orphans])
    keep = owner != MISSING
    return _tables(model, collected, forward, own, orphans[keep], owner[keep])


@dataclass(frozen=True)
class _Facts:
    """Per-event columns the rule-B walk reads."""

    host: np.ndarray  # host events the walk passes through
    is_cpu_op: np.ndarray
    gpu_uids: np.ndarray  # linked GPU events
    is_comm: np.ndarray
    pairs: pd.DataFrame  # (host ancestor, linked GPU event)
    has_gpu: np.ndarray
    comm_under: np.ndarray
    modelled: np.ndarray  # an op with a perf model that launches GPU work
    deeper: np.ndarray  # a modelled op is below
    modelled_child: np.ndarray
    leaf: np.ndarray
    forward: np.ndarray  # sole-backward ops: their forward op (else -1)


def _facts(
    model: TraceModel, has_model: Callable[[str], bool], has_backward: Callable[[str], bool] | None
) -> _Facts:
    ev = model.events
    cat = ev["cat"]
    parent = model.tree.parent
    linked = model.gpu[model.gpu["linked"].to_numpy()]
    gpu_uids = linked.index.to_numpy()
    is_comm = np.zeros(len(ev), dtype=bool)
    is_comm[gpu_uids] = linked["bucket"].to_numpy() == "communication"
    host = cat.isin(["cpu_op", "python_function", "cuda_runtime", "cuda_driver"]).to_numpy()
    pairs = subtree_pairs(parent, gpu_uids, host)
    has_gpu, comm_under = np.zeros(len(ev), dtype=bool), np.zeros(len(ev), dtype=bool)
    has_gpu[pairs["ancestor"].to_numpy()] = True
    comm_under[pairs["ancestor"].to_numpy()[is_comm[pairs["node"].to_numpy()]]] = True
    is_cpu_op = (cat == "cpu_op").to_numpy()
    model_named = is_cpu_op & name_matches(ev["name"], has_model)
    modelled = model_named & has_gpu
    deeper = np.zeros(len(ev), dtype=bool)
    below = subtree_pairs(parent, np.flatnonzero(modelled), np.ones(len(ev), dtype=bool))
    deeper[below["ancestor"].to_numpy()] = True
    modelled_child = np.zeros(len(ev), dtype=bool)
    named_parent = parent[np.flatnonzero(model_named)]
    modelled_child[named_parent[named_parent != MISSING]] = True
    forward = np.full(len(ev), MISSING, dtype=np.int64)
    if has_backward is not None:
        forward = sole_backward(model, is_cpu_op & has_gpu, has_backward)
    return _Facts(
        host, is_cpu_op, gpu_uids, is_comm, pairs, has_gpu, comm_under, modelled, deeper,
        modelled_child, _leaf_ops(model, gpu_uids), forward,
    )  # fmt: skip


def _collect(model: TraceModel, f: _Facts) -> tuple[np.ndarray, np.ndarray]:
    """The walk down from the roots, as columns: (collected ops, the sole-backward ones in
    the walk's order).

    Walking down, a modelled op is taken whole; a cpu_op with no modelled op below is taken
    as a sole-backward op, or as a leaf (unless its modelled children launched nothing or it
    holds communication: its kernels then become synthetic ops); the walk stops at each of
    them and goes through every other host event that leads to GPU work. An op is reached
    when every event above it is passed through.
    """
    parent = model.tree.parent
    visit = f.has_gpu & f.host
    plain = f.is_cpu_op & ~f.deeper
    sole = plain & (f.forward != MISSING)
    stops = f.modelled | sole | (plain & f.leaf)
    nodes = np.flatnonzero(visit & stops)
    blocked = ~visit | stops
    reached = nodes[nearest_ancestor(parent, blocked, nodes) == MISSING]
    taken = f.modelled | sole | (~f.modelled_child & ~f.comm_under)
    collected = reached[taken[reached]]
    backward = collected[~f.modelled[collected] & sole[collected]]
    return collected, _in_walk_order(model, visit, backward)


def _in_walk_order(model: TraceModel, visit: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """`nodes` in the order a depth-first walk from the roots (in start-time order, children
    too) meets them: by the path of sibling ranks from the root down."""
    if len(nodes) < 2:
        return nodes
    parent, ts = model.tree.parent, model.events["ts"].to_numpy()
    members = np.flatnonzero(visit)
    order = members[np.lexsort((ts[members], parent[members]))]
    first = np.unique(parent[order], return_index=True)[1]
    group_start = np.repeat(first, np.diff(np.append(first, len(order))))
    rank = np.zeros(len(parent), dtype=np.int64)
    rank[order] = np.arange(len(order)) - group_start
    paths = [[int(rank[a]) for a in reversed([int(n), *ancestors(parent, int(n))])] for n in nodes]
    return nodes[sorted(range(len(nodes)), key=paths.__getitem__)]


def _backward_kernels(model: TraceModel, f: _Facts, backward: np.ndarray) -> pd.DataFrame:
    """A sole backward op owns every GPU event under its forward op's backward nodes."""
    nodes = pd.DataFrame({"ancestor": backward, "fwd": f.forward[backward]})
    bwd = nodes.merge(model.autograd.pairs, on="fwd", sort=False)
    under = f.pairs.rename(columns={"ancestor": "bwd"}).reset_index(drop=True)
    under = under.assign(row=np.arange(len(under)))
    owned = bwd[["ancestor", "bwd"]].merge(under, on="bwd", sort=False)
    # per backward op (in walk order), its GPU events in the order of the pairs table
    owned = owned.assign(op=pd.Categorical(owned["ancestor"], categories=backward, ordered=True))
    owned = owned.sort_values(["op", "row"], kind="stable").drop_duplicates(["ancestor", "node"])
    return owned[["ancestor", "node"]].reset_index(drop=True)


def _tables(
    model: TraceModel,
    collected: np.ndarray,
    forward: np.ndarray,
    own: pd.DataFrame,
    orphans: np.ndarray,
    owner: np.ndarray,
) -> UnifiedOps:
    """The ops table (collected ops, then one synthetic op per orphan kernel) and kernels."""
    names = model.names
    synthetic = [
        SYNTHETIC.format(owner=names[o], kernel=names[k])
        for o, k in zip(owner, orphans, strict=True)
    ]
    ops = pd.DataFrame(
        {
            "uid": np.concatenate([collected, orphans]),  # orphans: the kernel's own uid
            "name": np.concatenate([names[collected], np.array(synthetic, dtype=object)]),
            "source_uid": np.concatenate([collected, owner]),
        }
    )
    ops["synthetic"] = np.arange(len(ops)) >= len(collected)
    backward = np.concatenate([forward[collected] != MISSING, np.zeros(len(orphans), bool)])
    ops["backward"] = backward
    ops["model_uid"] = np.where(backward, forward[ops["uid"].to_numpy()], ops["source_uid"])
    row_of = np.full(len(forward), MISSING, dtype=np.int64)
    row_of[collected] = np.arange(len(collected))
    kernels = pd.DataFrame(
        {
            "op": np.concatenate(
                [row_of[own["ancestor"].to_numpy()], np.arange(len(collected), len(ops))]
            ),
            "gpu": np.concatenate([own["node"].to_numpy(), orphans]),
        }
    )
    return UnifiedOps(ops=ops, kernels=kernels)
