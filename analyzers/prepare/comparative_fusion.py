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

from ..compare.comparison import Comparison
from ..report.launchers import subtree_pairs
from ..trace.tree import ancestors
from .fusion import (
    SKIPPED_CONTAINERS,
    _kernel_traits,
    base_name,
    chain_label,
    dedup_by_kernel_set,
    is_already_fused,
    is_excluded,
)
from .fusion_lookup import json_cell

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
    rows = _container_kernels(comparison, one)
    passing = _passing(rows, two)
    rows = rows[rows["container"].isin(passing.index)]
    trace2 = two.assign(lca=two["lowest_common_ancestor_id"].astype(np.int64))
    model = comparison.diff.tree1.model
    passing = passing.assign(base=[base_name(str(model.names[c])) for c in passing.index])
    found: dict[str, ComparativeCandidate] = {}
    for base, group in passing.groupby("base", sort=False):
        first = int(group.index[0])
        kernels = rows[rows["container"] == first]
        side2 = trace2[trace2["lca"].isin(set(kernels["lca"]))].sort_values("lca", kind="stable")
        found[str(base)] = _candidate(model, first, kernels, side2, group)
    kept = [
        c for c in found.values() if c.total_kernel_time_us_trace1 >= c.total_kernel_time_us_trace2
    ]
    return sorted(dedup_by_kernel_set(kept), key=lambda c: -c.total_kernel_time_us_trace1)


def _passing(rows: pd.DataFrame, two: pd.DataFrame) -> pd.DataFrame:
    """Per container that passes the gates, in uid order: n1, n2 and both kernel times."""
    per_lca = two.groupby("lowest_common_ancestor_id").agg(
        n2=("kernel_time", "size"), t2=("kernel_time", "sum")
    )
    per_lca.index = per_lca.index.astype(np.int64)
    lcas = rows[["container", "lca"]].drop_duplicates().join(per_lca, on="lca")
    side2 = lcas.groupby("container")[["n2", "t2"]].sum()
    side1 = rows.groupby("container").agg(n1=("uid", "size"), t1=("dur", "sum"))
    sizes = side1.join(side2).fillna({"n2": 0, "t2": 0.0}).astype({"n2": np.int64})
    n1, n2 = sizes["n1"], sizes["n2"]
    sizes = sizes[(n2 >= 1) & (n1 > n2) & (n1 <= MAX_KERNELS) & (n1 - n2 <= MAX_EXTRA_KERNELS)]
    extra = rows[rows["container"].isin(sizes.index)].join(sizes[["n1", "n2"]], on="container")
    extra = extra.sort_values(["container", "dur"], kind="stable")  # shortest first
    extra = extra[extra.groupby("container").cumcount().to_numpy() < (extra["n1"] - extra["n2"])]
    names = pd.Series(extra["name"].unique())
    overhead = pd.DataFrame(
        {
            "excluded": names.map(is_excluded).to_numpy(),
            "layout": names.map(_is_layout).to_numpy(),
        },
        index=names.to_numpy(),
    ).reindex(extra["name"].to_numpy())
    overhead.index = extra["container"].to_numpy()
    flags = overhead.groupby(level=0).all()
    rejected = flags.index[(flags["excluded"] | flags["layout"]).to_numpy()]
    return sizes.drop(index=rejected).sort_index()


def _is_layout(name: str) -> bool:
    lowered = name.lower()
    return any(t in lowered for t in LAYOUT_TRANSFORMS)


def _container_kernels(comparison: Comparison, one: pd.DataFrame) -> pd.DataFrame:
    """The one-sided trace-1 kernels (uid, name, dur, lca) of every host container with at
    least two GPU events and at least two of them, by container then time."""
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
            "name": model.names[nodes],
            "dur": ev["dur"].to_numpy()[nodes],
            "ts": ev["ts"].to_numpy()[nodes],
            "lca": lca.reindex(nodes).to_numpy(),
        }
    )
    rows = rows[rows.groupby("container")["uid"].transform("size").to_numpy() >= 2]
    return rows.sort_values(["container", "ts", "uid"], kind="stable")


def _candidate(
    model, first: int, kernels: pd.DataFrame, side2: pd.DataFrame, instances: pd.DataFrame
) -> ComparativeCandidate:
    """The candidate of one base name: the first passing instance's kernels, every passing
    instance's count and times."""
    kernels1 = [
        {
            "name": str(name),
            "type": _kernel_traits(name)[0],
            "dur_us": float(dur),
            "lca_id": int(lca),
            "gpu_op_uid": int(uid),
        }
        for name, dur, lca, uid in zip(
            kernels["name"], kernels["dur"], kernels["lca"], kernels["uid"], strict=True
        )
    ]
    kernels2 = [
        {"name": str(n), "type": _kernel_traits(str(n))[0], "dur_us": float(d)}
        for n, d in zip(side2["name"], side2["kernel_time"], strict=True)
    ]
    signature = [k["type"] for k in kernels1]
    raw = str(model.names[first])
    chain = [chain_label(str(model.names[a])) for a in ancestors(model.tree.parent, first)]
    return ComparativeCandidate(
        module_name=raw,
        base_name=base_name(raw),
        parent_chain=chain,
        instance_count=len(instances),
        kernel_count_trace1=len(kernels1),
        kernel_count_trace2=len(kernels2),
        delta=len(kernels1) - len(kernels2),
        kernels_trace1=kernels1,
        kernels_trace2=kernels2,
        kernel_type_signature=signature,
        kernel_type_summary={t: signature.count(t) for t in dict.fromkeys(signature)},
        has_fused_kernel=any(is_already_fused(k["name"]) for k in kernels1),
        total_kernel_time_us_trace1=float(instances["t1"].sum()),
        total_kernel_time_us_trace2=float(instances["t2"].sum()),
        input_dims=json_cell(model.events["input_dims"].iat[first]),
    )
