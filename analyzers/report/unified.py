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

from rooflens.analyzers.report.backward import SoleBackward
from rooflens.analyzers.report.launchers import subtree_pairs
from rooflens.analyzers.trace.columns import MISSING, name_matches
from rooflens.analyzers.trace.model import TraceModel

LEAF_SEARCH_DEPTH = 10
SYNTHETIC = "{owner}->{kernel} (Synthetic Op)"


@dataclass(frozen=True)
class UnifiedOps:
    """`ops`: one row per attributed op instance; `kernels`: (op row, GPU event) pairs."""

    ops: pd.DataFrame  # columns: uid, name, source_uid, synthetic, backward, model_uid
    kernels: pd.DataFrame  # columns: op (row position in ops), gpu (uid)


def _children(parent: np.ndarray, nodes: np.ndarray, ts: np.ndarray) -> dict[int, list[int]]:
    """Host children per node, in start-time order."""
    has_parent = nodes[parent[nodes] != MISSING]
    order = has_parent[np.lexsort((ts[has_parent], parent[has_parent]))]
    children: dict[int, list[int]] = {}
    for child, p in zip(order.tolist(), parent[order].tolist(), strict=True):
        children.setdefault(p, []).append(child)
    return children


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
    ev = model.events
    cat = ev["cat"]
    parent = model.tree.parent
    names = model.names
    gpu = model.gpu
    linked = gpu[gpu["linked"].to_numpy()]
    gpu_uids = linked.index.to_numpy()
    is_comm = np.zeros(len(ev), dtype=bool)
    is_comm[gpu_uids] = linked["bucket"].to_numpy() == "communication"

    host = cat.isin(["cpu_op", "python_function", "cuda_runtime", "cuda_driver"]).to_numpy()
    pairs = subtree_pairs(parent, gpu_uids, host)
    has_gpu = np.zeros(len(ev), dtype=bool)
    has_gpu[pairs["ancestor"].to_numpy()] = True
    comm_under = np.zeros(len(ev), dtype=bool)
    comm_under[pairs["ancestor"].to_numpy()[is_comm[pairs["node"].to_numpy()]]] = True

    is_cpu_op = (cat == "cpu_op").to_numpy()
    model_named = is_cpu_op & name_matches(ev["name"], has_model)
    modelled = model_named & has_gpu
    deeper = np.zeros(len(ev), dtype=bool)
    below = subtree_pairs(parent, np.flatnonzero(modelled), np.ones(len(ev), dtype=bool))
    deeper[below["ancestor"].to_numpy()] = True
    modelled_child = np.zeros(len(ev), dtype=bool)
    named_children = np.flatnonzero(model_named)
    modelled_child[parent[named_children][parent[named_children] != MISSING]] = True
    leaf = _leaf_ops(model, gpu_uids)

    ts = ev["ts"].to_numpy()
    visit_nodes = np.flatnonzero(has_gpu & host)
    children = _children(parent, visit_nodes, ts)
    roots = visit_nodes[parent[visit_nodes] == MISSING]
    roots = roots[np.argsort(ts[roots], kind="stable")]
    sole = None
    if has_backward is not None:
        sole = SoleBackward(model, names, is_cpu_op & has_gpu, has_backward)
    collected: list[int] = []
    backward_of: dict[int, int] = {}
    stack = roots[::-1].tolist()
    while stack:
        node = stack.pop()
        kids = children.get(node, [])
        if modelled[node]:
            collected.append(node)
            continue
        if sole is not None and is_cpu_op[node] and not deeper[node]:
            fwd = sole.forward_of(node)
            if fwd != MISSING:
                collected.append(node)
                backward_of[node] = fwd
                continue
        if not deeper[node] and is_cpu_op[node] and leaf[node]:
            # a leaf whose modelled children launched nothing is not taken: its kernels
            # become synthetic ops (TraceLens's rule 5)
            if not modelled_child[node] and not comm_under[node]:
                collected.append(node)
            continue
        stack.extend(reversed(kids))

    collected_arr = np.array(sorted(set(collected)), dtype=np.int64)
    is_collected = np.zeros(len(ev), dtype=bool)
    is_collected[collected_arr] = True
    own = pairs[is_collected[pairs["ancestor"].to_numpy()]]
    if backward_of:
        # a sole backward op owns every kernel of its forward op's backward nodes
        bwd_nodes = model.autograd.pairs
        extra = []
        for node, fwd in backward_of.items():
            nodes = bwd_nodes.loc[bwd_nodes["fwd"] == fwd, "bwd"].to_numpy()
            under = pairs[np.isin(pairs["ancestor"].to_numpy(), nodes)]
            extra.append(pd.DataFrame({"ancestor": node, "node": under["node"].to_numpy()}))
        own = pd.concat([own, *extra]).drop_duplicates()
    covered = np.zeros(len(ev), dtype=bool)
    covered[own["node"].to_numpy()] = True

    orphans = gpu_uids[~covered[gpu_uids] & ~is_comm[gpu_uids]]
    owner = model.launcher[orphans]
    owner = np.where(owner != MISSING, owner, parent[orphans])
    keep = owner != MISSING
    orphans, owner = orphans[keep], owner[keep]

    ops = pd.concat(
        [
            pd.DataFrame(
                {"uid": collected_arr, "name": names[collected_arr], "source_uid": collected_arr}
            ),
            pd.DataFrame(
                {
                    "uid": orphans,  # the kernel's own uid: a resolvable drill-down handle
                    "name": [
                        SYNTHETIC.format(owner=names[o], kernel=names[k])
                        for o, k in zip(owner, orphans, strict=True)
                    ],
                    "source_uid": owner,
                }
            ),
        ],
        ignore_index=True,
    )
    ops["synthetic"] = np.arange(len(ops)) >= len(collected_arr)
    ops["backward"] = ops["uid"].isin(list(backward_of)) & ~ops["synthetic"]
    ops["model_uid"] = [
        backward_of.get(int(u), int(s)) if b else int(s)
        for u, s, b in zip(ops["uid"], ops["source_uid"], ops["backward"], strict=True)
    ]
    row_of = pd.Series(np.arange(len(collected_arr)), index=collected_arr)
    kernels = pd.concat(
        [
            pd.DataFrame({"op": row_of.loc[own["ancestor"]].to_numpy(), "gpu": own["node"]}),
            pd.DataFrame({"op": np.arange(len(collected_arr), len(ops)), "gpu": orphans}),
        ],
        ignore_index=True,
    )
    return UnifiedOps(ops=ops, kernels=kernels)
