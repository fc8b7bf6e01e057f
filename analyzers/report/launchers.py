"""Rule A (docs/report-tables.md#rule-a-launchers): each GPU event is owned by its kernel launcher.

The launcher is the first `cpu_op` above the runtime launch, looking through Python frames
and `execute` pass-throughs; with none, the launch itself (a graph launch, a bare
cudaLaunchKernel). The result is one row per launcher instance with its direct and subtree
GPU busy times, and one row per owned GPU event (the kernel table every summary reads).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..perf.categories import CategoryTable
from ..trace.columns import MISSING, name_matches
from ..trace.intervals import grouped_union_length
from ..trace.model import TraceModel

PASS_THROUGH_OPS = frozenset({"execute"})


@dataclass(frozen=True)
class Launchers:
    """`instances`: one row per launcher (index uid); `kernels`: its direct GPU events."""

    instances: pd.DataFrame
    kernels: pd.DataFrame


def find_launchers(model: TraceModel) -> np.ndarray:
    """Launcher uid per event (meaningful for GPU events; -1 for unlinked ones)."""
    ev = model.events
    cat = ev["cat"]
    is_cpu_op = (cat == "cpu_op").to_numpy()
    skip_op = is_cpu_op & name_matches(ev["name"], lambda n: n in PASS_THROUGH_OPS)
    passable = (cat == "python_function").to_numpy() | skip_op
    owner = is_cpu_op & ~skip_op
    parent = model.tree.parent
    launch = model.links.launch
    gpu = np.flatnonzero(launch != MISSING)
    result = np.full(len(ev), MISSING, dtype=np.int64)
    # a GPU event hangs under its launch; after a capture merge, under the capture-time launch
    own_launch = parent[gpu]
    result[gpu] = own_launch  # default: the launch itself
    position, current = gpu, parent[own_launch]
    while len(position):
        alive = current != MISSING
        position, current = position[alive], current[alive]
        hit = owner[current]
        result[position[hit]] = current[hit]
        go_on = ~hit & passable[current]
        position, current = position[go_on], parent[current[go_on]]
    return result


def subtree_pairs(parent: np.ndarray, nodes: np.ndarray, is_target: np.ndarray) -> pd.DataFrame:
    """(ancestor, node) for every ancestor of each node whose `is_target` is true."""
    ancestors, members = [], []
    position, current = nodes, parent[nodes]
    while len(position):
        alive = current != MISSING
        position, current = position[alive], current[alive]
        hit = is_target[current]
        ancestors.append(current[hit])
        members.append(position[hit])
        current = parent[current]
    if not ancestors:
        return pd.DataFrame({"ancestor": [], "node": []}, dtype=np.int64)
    return pd.DataFrame({"ancestor": np.concatenate(ancestors), "node": np.concatenate(members)})


def attribute_launchers(model: TraceModel, categories: CategoryTable) -> Launchers:
    """Launcher instances with direct/subtree busy time and category."""
    gpu = model.gpu
    owner = find_launchers(model)
    linked = gpu[gpu["linked"].to_numpy()]
    comm = linked["bucket"].to_numpy() == "communication"
    kernels = linked[~comm]
    kernels = kernels.assign(launcher=owner[kernels.index.to_numpy()])
    kernels = kernels.sort_values(["launcher", "ts"], kind="stable")

    launcher_uids = np.unique(kernels["launcher"].to_numpy())
    index_of = pd.Index(launcher_uids)
    start = kernels["ts"].to_numpy()
    end = start + kernels["dur"].to_numpy()
    direct = grouped_union_length(index_of.get_indexer(kernels["launcher"]), start, end)

    # subtree: every linked GPU event (communication included) under the launcher
    is_launcher = np.zeros(len(model.events), dtype=bool)
    is_launcher[launcher_uids] = True
    pairs = subtree_pairs(model.tree.parent, linked.index.to_numpy(), is_launcher)
    own = pd.DataFrame({"ancestor": kernels["launcher"], "node": kernels.index})
    pairs = pd.concat([pairs, own]).drop_duplicates()
    s = model.events["ts"].to_numpy()[pairs["node"].to_numpy()]
    e = s + model.events["dur"].to_numpy()[pairs["node"].to_numpy()]
    subtree = grouped_union_length(index_of.get_indexer(pairs["ancestor"]), s, e)

    ev = model.events
    first_kernel = kernels.groupby("launcher", sort=True)["name"].first().astype(str)
    names = ev["name"].to_numpy()[launcher_uids].astype(str)
    labels = model.thread_labels(launcher_uids)
    instances = pd.DataFrame(
        {
            "name": names,
            "op category": [
                categories.category(n, k)
                for n, k in zip(names, first_kernel.to_numpy(), strict=True)
            ],
            "ts": ev["ts"].to_numpy()[launcher_uids],
            "total_direct_kernel_time": direct,
            "total_subtree_kernel_time": subtree,
            "num_kernels": kernels.groupby("launcher", sort=True).size().to_numpy(),
            "process_name": labels["process_name"].to_numpy(),
            "process_label": labels["process_label"].to_numpy(),
            "thread_name": labels["thread_name"].to_numpy(),
        },
        index=pd.Index(launcher_uids, name="uid"),
    )
    for column in ("input_dims", "input_type", "input_strides", "concrete_inputs"):
        instances[column] = ev[column].to_numpy()[launcher_uids]
    instances = instances.sort_values("ts", kind="stable")
    return Launchers(instances=instances, kernels=kernels)
