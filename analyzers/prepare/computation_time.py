"""Each unified row's share of the timeline's computation time (docs/analysis.md#category-time).

The GPU timeline counts computation as the union of the linked computation-bucket events, so
a stretch where two kernels overlap (several streams) counts once. A row's category time is
the sum, over its kernels, of the computation time each kernel holds: every instant of the
union is split equally among the kernels running then. Copies (`gpu_memcpy`, ROCm copy
kernels) and communication are not computation; memsets are not scored either (they take no
share, so the kernels they overlap keep theirs). The rows' category time therefore adds up to
the timeline's computation time, less what memsets alone ran and what no row owns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..report.kernel_stats import group_ids
from ..report.unified_table import GROUP_KEYS, UnifiedTable
from ..trace.model import TraceModel

COLUMN = "Computation Time (µs)_sum"
NOT_SCORED = "gpu_memset"


def kernel_shares(gpu: pd.DataFrame) -> pd.Series:
    """Computation time (µs) each GPU event holds, indexed like `gpu` (0 for the others).

    `gpu` has `ts`, `dur`, `cat`, `bucket` and `linked` columns (TraceModel.gpu).
    """
    scored = (
        gpu["linked"].to_numpy()
        & (gpu["bucket"].to_numpy() == "computation")
        & (gpu["cat"].astype(str).to_numpy() != NOT_SCORED)
    )
    out = pd.Series(0.0, index=gpu.index)
    if not scored.any():
        return out
    start = gpu["ts"].to_numpy(dtype=np.float64)[scored]
    end = start + np.nan_to_num(gpu["dur"].to_numpy(dtype=np.float64)[scored])
    bounds = np.unique(np.concatenate([start, end]))
    first = np.searchsorted(bounds, start)
    last = np.searchsorted(bounds, end)
    delta = np.zeros(len(bounds))
    np.add.at(delta, first, 1.0)
    np.add.at(delta, last, -1.0)
    active = np.cumsum(delta)[:-1]  # kernels running over [bounds[i], bounds[i+1])
    weight = np.where(active > 0, np.diff(bounds) / np.maximum(active, 1.0), 0.0)
    held = np.concatenate([[0.0], np.cumsum(weight)])
    out.iloc[np.flatnonzero(scored)] = held[last] - held[first]
    return out


@dataclass(frozen=True)
class RowComputation:
    """Per unified summary row (by `ex_UID`): computation time (µs), whether it ran any, and
    the time of the copies it launched (µs; rows without copies are left out)."""

    time_us: dict[int, float]
    computes: dict[int, bool]
    copy_us: dict[int, float] = field(default_factory=dict)


def row_computation(model: TraceModel, unified: UnifiedTable) -> RowComputation:
    """Computation time and scored-kernel presence of every unified summary row."""
    inst = unified.instances
    attribution = unified.attribution
    if attribution is None or inst.empty:
        return RowComputation({}, {})
    shares = kernel_shares(model.gpu)
    k = attribution.kernels
    gpu = k["gpu"].to_numpy()
    held = shares.reindex(gpu, fill_value=0.0).to_numpy()
    g = model.gpu.reindex(gpu)
    scored = (
        (g["bucket"].to_numpy() == "computation")
        & (g["cat"].astype(str).to_numpy() != NOT_SCORED)
        & g["linked"].fillna(False).to_numpy(dtype=bool)
    )
    dur = np.nan_to_num(g["dur"].to_numpy(dtype=np.float64))
    copies = np.where(g["bucket"].to_numpy() == "memcpy", dur, 0.0)
    ops = k["op"].to_numpy()
    per_op = np.bincount(ops, weights=held, minlength=len(inst))
    runs = np.bincount(ops, weights=scored, minlength=len(inst)) > 0
    copy_us = np.bincount(ops, weights=copies, minlength=len(inst))
    group = group_ids(inst, GROUP_KEYS)
    frame = pd.DataFrame({"group": group, "uid": inst["UID"].to_numpy(), "t": per_op, "c": runs,
                          "m": copy_us})  # fmt: skip
    by_group = frame.groupby("group", sort=True).agg(uid=("uid", "first"), t=("t", "sum"),
                                                      c=("c", "any"), m=("m", "sum"))  # fmt: skip
    uids = by_group["uid"].astype(int).to_numpy()
    moved = by_group["m"].to_numpy(dtype=float)
    return RowComputation(
        dict(zip(uids, by_group["t"].astype(float), strict=True)),
        dict(zip(uids, by_group["c"].astype(bool), strict=True)),
        {int(u): float(m) for u, m in zip(uids, moved, strict=True) if m > 0},
    )
