"""Fusion candidates of a comparative run, read from the tree diff.

See docs/compare.md#fusion-from-the-diff.

A host container of trace 1 is a candidate when its one-sided kernels (those with a lowest
common ancestor in `diff_stats`) did the work that trace 2 does under the same ancestors with
fewer kernels: more kernels in trace 1 (at most 15 more, at most 30 in all, at least one in
trace 2), the extra ones not all communication or copies and not all layout transforms.
Instances are summed by base name; a candidate is kept when trace 1 took at least as long as
trace 2, one per set of trace-1 kernels, longest first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooflens.analyzers.compare.comparison import Comparison
from rooflens.analyzers.prepare.fusion import (
    SKIPPED_CONTAINERS,
    _kernel_traits,
    base_name,
    chain_label,
    dedup_by_kernel_set,
    is_already_fused,
    is_excluded,
)
from rooflens.analyzers.prepare.fusion_lookup import json_cell
from rooflens.analyzers.report.launchers import subtree_pairs
from rooflens.analyzers.trace.tree import ancestors

MAX_EXTRA_KERNELS = 15  # n1 - n2
MAX_KERNELS = 30  # n1
LAYOUT_TRANSFORMS = (
    "batched_transpose",
    "nchw2nhwc",
    "nhwc2nchw",
    "transpose_nchw",
    "transpose_cnhw",
)


@dataclass
class ComparativeCandidate:
    """One entry of a comparative run's fusion_candidates.json."""

    module_name: str
    base_name: str
    parent_chain: list[str]
    instance_count: int
    kernel_count_trace1: int
    kernel_count_trace2: int
    delta: int
    kernels_trace1: list[dict[str, Any]]
    kernels_trace2: list[dict[str, Any]]
    kernel_type_signature: list[str]
    kernel_type_summary: dict[str, int]
    has_fused_kernel: bool
    total_kernel_time_us_trace1: float
    total_kernel_time_us_trace2: float
    input_dims: Any = None

    def kernel_names(self) -> tuple[str, ...]:
        return tuple(k["name"] for k in self.kernels_trace1)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def comparative_candidates(comparison: Comparison) -> list[ComparativeCandidate]:
    """The candidates of trace 1 (`comparison.diff.tree1.model`) against trace 2."""
    stats = comparison.diff_stats
    with_lca = stats[stats["lowest_common_ancestor_id"].notna()]
    one = with_lca[with_lca["source"] == "trace1"]
    two = with_lca[with_lca["source"] == "trace2"]
    if one.empty or two.empty:
        return []
    per_container = _container_kernels(comparison, one)
    trace2 = {int(lca): rows for lca, rows in two.groupby("lowest_common_ancestor_id", sort=True)}
    found: dict[str, ComparativeCandidate] = {}
    model = comparison.diff.tree1.model
    for container, rows in per_container:
        kernels2 = [trace2[lca] for lca in sorted(set(rows["lca"])) if lca in trace2]
        if not kernels2:
            continue
        side2 = pd.concat(kernels2)
        n1, n2 = len(rows), len(side2)
        if not (n2 < n1 <= MAX_KERNELS and n1 - n2 <= MAX_EXTRA_KERNELS):
            continue
        if _only_overhead(rows.nsmallest(n1 - n2, "dur", keep="first")["name"]):
            continue
        _add(found, model, container, rows, side2)
    kept = [
        c for c in found.values() if c.total_kernel_time_us_trace1 >= c.total_kernel_time_us_trace2
    ]
    return sorted(dedup_by_kernel_set(kept), key=lambda c: -c.total_kernel_time_us_trace1)


def _container_kernels(comparison: Comparison, one: pd.DataFrame):
    """(container uid, its one-sided trace-1 kernels in time order) for every host container
    with at least two GPU events and at least two one-sided kernels, in uid order."""
    model = comparison.diff.tree1.model
    ev = model.events
    gpu = model.gpu
    linked = gpu.index.to_numpy()[gpu["linked"].to_numpy()]
    is_container = ~ev["cat"].isin(SKIPPED_CONTAINERS).to_numpy() & (ev["ph"] == "X").to_numpy()
    pairs = subtree_pairs(model.tree.parent, linked, is_container)
    sizes = pairs.groupby("ancestor")["node"].transform("size")
    pairs = pairs[sizes.to_numpy() >= 2]
    lca = pd.Series(
        one["lowest_common_ancestor_id"].astype(np.int64).to_numpy(),
        index=one["gpu_op_uid"].astype(np.int64).to_numpy(),
    )
    pairs = pairs[pairs["node"].isin(lca.index)]
    nodes = pairs["node"].to_numpy()
    rows = pd.DataFrame(
        {
            "container": pairs["ancestor"].to_numpy(),
            "uid": nodes,
            "name": model.names[nodes].astype(str),
            "dur": ev["dur"].to_numpy()[nodes],
            "ts": ev["ts"].to_numpy()[nodes],
            "lca": lca.reindex(nodes).to_numpy(),
        }
    )
    rows = rows[rows.groupby("container")["uid"].transform("size").to_numpy() >= 2]
    rows = rows.sort_values(["container", "ts", "uid"], kind="stable")
    return rows.groupby("container", sort=True)


def _only_overhead(names: pd.Series) -> bool:
    """The extra kernels are all communication/copies, or all layout transforms."""
    lowered = [str(n).lower() for n in names]
    return all(map(is_excluded, lowered)) or all(
        any(t in n for t in LAYOUT_TRANSFORMS) for n in lowered
    )


def _add(
    found: dict[str, ComparativeCandidate],
    model,
    container: int,
    rows: pd.DataFrame,
    side2: pd.DataFrame,
) -> None:
    """Count one passing instance under its base name (the first one gives the kernels)."""
    raw = str(model.names[container])
    base = base_name(raw)
    time1, time2 = float(rows["dur"].sum()), float(side2["kernel_time"].sum())
    held = found.get(base)
    if held is not None:
        held.instance_count += 1
        held.total_kernel_time_us_trace1 += time1
        held.total_kernel_time_us_trace2 += time2
        return
    kernels1 = [
        {
            "name": name,
            "type": _kernel_traits(name)[0],
            "dur_us": float(dur),
            "lca_id": int(lca),
            "gpu_op_uid": int(uid),
        }
        for name, dur, lca, uid in zip(
            rows["name"], rows["dur"], rows["lca"], rows["uid"], strict=True
        )
    ]
    kernels2 = [
        {"name": str(n), "type": _kernel_traits(str(n))[0], "dur_us": float(d)}
        for n, d in zip(side2["name"], side2["kernel_time"], strict=True)
    ]
    signature = [k["type"] for k in kernels1]
    found[base] = ComparativeCandidate(
        module_name=raw,
        base_name=base,
        parent_chain=[
            chain_label(str(model.names[a])) for a in ancestors(model.tree.parent, container)
        ],
        instance_count=1,
        kernel_count_trace1=len(kernels1),
        kernel_count_trace2=len(kernels2),
        delta=len(kernels1) - len(kernels2),
        kernels_trace1=kernels1,
        kernels_trace2=kernels2,
        kernel_type_signature=signature,
        kernel_type_summary={t: signature.count(t) for t in dict.fromkeys(signature)},
        has_fused_kernel=any(is_already_fused(k["name"]) for k in kernels1),
        total_kernel_time_us_trace1=time1,
        total_kernel_time_us_trace2=time2,
        input_dims=json_cell(model.events["input_dims"].iat[container]),
    )
