"""Each collective type of a trace with its source, its count per step and the part no
computation hid (docs/analysis.md#multi-kernel).

The type is read from the kernel's name (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`,
`ncclKernel_SendRecv`, RCCL's same names), else from the collective name Kineto records on
it (`record_param_comms`' `Collective name`). Exposed time is the collective time no
computation kernel overlapped; copies do not hide a collective. A type whose calls are many
per step (MANY_PER_STEP) and short (median under TINY_US) is flagged `many_small`: each pays
the collective's latency and its launch, so fewer, larger ones (gradient bucketing) win.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import BaseModel

from ..trace.idle_causes import IdleBreakdown
from ..trace.intervals import merge
from ..trace.model import TraceModel
from .copy_sources import (
    Source,
    Timing,
    event_sources,
    exposed_each,
    phase_of,
    sources,
    timing,
)

# (type, words in the lower-cased name with "_" removed), first match wins
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("all_reduce", ("allreduce",)),
    ("reduce_scatter", ("reducescatter",)),
    ("all_gather", ("allgather",)),
    ("all_to_all", ("alltoall", "sendrecv")),
    ("broadcast", ("broadcast", "bcast")),
    ("send_recv", ("send", "recv")),
    ("reduce", ("reduce",)),
)
MANY_PER_STEP = 20
TINY_US = 100.0


class CollectiveGroup(BaseModel):
    """Every collective kernel of one type."""

    kind: str  # all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, ... or other
    count: int
    time_us: float
    median_us: float
    exposed_us: float  # not overlapped with any computation kernel
    overlap_percent: float  # share of the collective time computation overlapped
    many_small: bool
    kernels: list[str]  # the kernel names, most time first (at most 3)
    sources: list[Source]
    timing: Timing


def collective_kind(names: pd.Series, recorded: pd.Series) -> np.ndarray:
    """The type of each collective kernel: from its name, else from the recorded name."""
    out = np.full(len(names), "other", dtype=object)
    for text in (recorded.astype(object).where(recorded.notna(), ""), names.astype(str)):
        key = text.astype(str).str.lower().str.replace("_", "", regex=False)
        found = np.full(len(names), "other", dtype=object)
        for kind, words in reversed(KINDS):  # first match wins: set the last ones first
            hit = np.zeros(len(names), dtype=bool)
            for word in words:
                hit |= key.str.contains(word, regex=False).to_numpy()
            found = np.where(hit, kind, found)
        out = np.where(found != "other", found, out)  # the kernel's name wins when it says
    return out


def collective_groups(
    model: TraceModel, gpu: pd.DataFrame, idle: IdleBreakdown | None
) -> list[CollectiveGroup]:
    """The collectives of `gpu` (the timeline's events) by type, most exposed time first."""
    bucket = gpu["bucket"].to_numpy()
    comm = gpu[bucket == "communication"]
    if comm.empty:
        return []
    compute = gpu[bucket == "computation"]
    c_start = compute["ts"].to_numpy(dtype=np.float64)
    hiding = merge(c_start, c_start + np.nan_to_num(compute["dur"].to_numpy(dtype=np.float64)))
    start = comm["ts"].to_numpy(dtype=np.float64)
    dur = np.nan_to_num(comm["dur"].to_numpy(dtype=np.float64))
    exposed = exposed_each(start, start + dur, hiding)
    phase = phase_of(start, idle)
    table = event_sources(model, comm)
    column = model.events.get("collective_name")
    recorded = pd.Series([None] * len(comm)) if column is None else column.loc[comm.index]
    kind = collective_kind(comm["name"], recorded.reset_index(drop=True))
    names = comm["name"].astype(str).to_numpy()
    groups = []
    for value in pd.unique(kind):
        rows = np.flatnonzero(kind == value)
        d, e = dur[rows], exposed[rows]
        when = timing(phase[rows], d, e, idle)
        kernels = pd.Series(d).groupby(names[rows]).sum().sort_values(ascending=False)
        median = float(np.median(d))
        total = float(d.sum())
        groups.append(
            CollectiveGroup(
                kind=str(value),
                count=len(rows),
                time_us=round(total, 3),
                median_us=round(median, 3),
                exposed_us=round(float(e.sum()), 3),
                overlap_percent=round((1 - e.sum() / total) * 100, 2) if total > 0 else 0.0,
                many_small=bool((when.per_iteration or 0) >= MANY_PER_STEP and median < TINY_US),
                kernels=[str(k) for k in kernels.index[:3]],
                sources=sources(table.iloc[rows].reset_index(drop=True), d, e),
                timing=when,
            )
        )
    groups.sort(key=lambda g: (-g.exposed_us, -g.time_us, g.kind))
    return groups
