"""Trace 1 replayed with trace 2's GPU times: a prediction that can be held against trace 2's
own measured step (docs/what-if.md#predictions-against-measurements).

The tree diff pairs operators; the GPU work under each matched operator (its nearest matched
operator, the diff's `lca`) is paired as a whole, since kernel names differ from one library
or vendor to another: trace 1's events under it take trace 2's total time for that operator,
in proportion to their own. Trace 1's GPU work under no matched operator is absent from
trace 2 and takes no time; trace 2's GPU work under an operator trace 1 never ran cannot be
placed and is reported as `unplaced_us`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..replay.graph import ReplayGraph
from ..replay.simulate import Changes
from ..trace.columns import MISSING
from .tree_diff import TreeDiff


@dataclass(frozen=True)
class AsTrace2:
    changes: Changes
    paired_groups: int
    dropped_us: float  # trace 1's GPU time under no matched operator
    unplaced_us: float  # trace 2's GPU time under an operator trace 1's GPU work never had


def as_trace2(diff: TreeDiff, graph1: ReplayGraph) -> AsTrace2:
    dur1 = _durations(diff.tree1.model)
    dur2 = _durations(diff.tree2.model)
    lca = diff.lca
    one = (diff.uid1 != MISSING) & diff.tree1.is_gpu[np.maximum(diff.uid1, 0)]
    two = (diff.uid2 != MISSING) & diff.tree2.is_gpu[np.maximum(diff.uid2, 0)]
    side1 = pd.DataFrame({"uid": diff.uid1[one], "group": lca[one], "us": dur1[diff.uid1[one]]})
    side2 = pd.DataFrame({"group": lca[two], "us": dur2[diff.uid2[two]]})
    total1 = side1.groupby("group")["us"].sum()
    total2 = side2.groupby("group")["us"].sum()
    both = total1.index.intersection(total2.index).difference([MISSING])
    ratio = (total2[both] / total1[both]).replace([np.inf], 0.0).fillna(1.0)
    factor = side1["group"].map(ratio).fillna(0.0).to_numpy()  # unmatched: not in trace 2
    by_uid = pd.Series(factor, index=side1["uid"].to_numpy())
    scale = by_uid.reindex(graph1.gpu.uid).fillna(1.0).to_numpy()
    dropped = float(side1.loc[~side1["group"].isin(both), "us"].sum())
    unplaced = float(side2.loc[~side2["group"].isin(both), "us"].sum())
    return AsTrace2(Changes(gpu_scale=scale, label="as trace 2"), len(both), dropped, unplaced)


def _durations(model) -> np.ndarray:
    dur = model.events["dur"].to_numpy(float)
    return np.where(np.isfinite(dur), dur, 0.0)
