"""Copy data: every copy the GPU timeline counts, grouped by name, with its bytes, its route
and the part no kernel or collective hid (docs/analysis.md#copies).

The events are the timeline's (linked ones only, like `gpu_timeline`), so the groups' exposed
time is drawn from the same `exposed_memcpy_time` the impact scale's copy pool holds. A copy's
name says its route and, on CUDA, the host memory it read or wrote: Kineto writes
`Memcpy HtoD (Pageable -> Device)`, `Memcpy DtoH (Device -> Pinned)`; ROCm writes `Host`, which
does not say whether the buffer was pinned. Memsets are summarised beside the copies: the
timeline counts them as computation, the compute categories score none of them.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel

from ..trace.columns import MISSING
from ..trace.idle_causes import IdleBreakdown
from ..trace.intervals import Intervals, merge, subtract
from ..trace.model import TraceModel
from .collective_table import CollectiveGroup, collective_groups
from .copy_sources import (
    Source,
    Timing,
    event_sources,
    exposed_each,
    phase_of,
    sources,
    timing,
)
from .multi_kernel import memcpy_direction

Route = Literal["H2D", "D2H", "D2D", "P2P", "other"]
HostMemory = Literal["pageable", "pinned", "unknown", "none"]  # none: no host side

# ROCm copy kernels name their route in capitals (MEMORY_COPY_HOST_TO_DEVICE).
_ROUTE_WORDS: tuple[tuple[Route, str], ...] = (
    ("H2D", "host_to_device"),
    ("D2H", "device_to_host"),
    ("D2D", "device_to_device"),
)
_ENDS = re.compile(r"\(\s*(\w+)\s*->\s*(\w+)\s*\)")
_MEMORY: dict[str, HostMemory] = {"pageable": "pageable", "pinned": "pinned"}
TOP_LAUNCHERS = 3
MEMSET = "gpu_memset"


class Launcher(BaseModel):
    """An operator that launched copies of a group."""

    name: str
    count: int
    time_us: float


class CopyGroup(BaseModel):
    """The copies of one name: how many, how long, how many bytes, how much was exposed."""

    name: str
    route: Route
    host_memory: HostMemory
    count: int
    time_us: float
    bytes: int  # summed over the copies whose bytes the trace recorded
    with_bytes: int  # how many copies recorded their bytes
    exposed_us: float  # the group's copy time no computation or collective overlapped
    launchers: list[Launcher]
    sources: list[Source] = []  # the call sites that issue the group (copy_sources.py)
    timing: Timing | None = None  # when: time per phase, count per steady iteration


class MemsetSummary(BaseModel):
    count: int
    time_us: float
    bytes: int


class CopyData(BaseModel):
    """Every linked copy of a trace, by name (longest exposed time first), and its memsets."""

    groups: list[CopyGroup]
    memsets: MemsetSummary
    time_us: float  # the union of the copies
    exposed_us: float  # the timeline's exposed copy time
    steady: bool = False  # the window has steady iterations: groups are priced on them
    collectives: list[CollectiveGroup] = []  # each collective type, its source and timing


def copy_route(name: str) -> Route:
    """A copy's route from its name: a peer copy (`Memcpy PtoP (Device -> Device)`), else the
    multi-kernel directions, else ROCm's copy-kernel words."""
    lower = name.lower()
    if "ptop" in lower:
        return "P2P"
    found = str(memcpy_direction(pd.Series([name]))[0])
    if found != "other":
        return found  # type: ignore[return-value]
    return next((route for route, word in _ROUTE_WORDS if word in lower), "other")


def host_memory(name: str, route: Route) -> HostMemory:
    """Pageable or pinned when the name says so (`(Pageable -> Device)`), else unknown; `none`
    for routes without a host side."""
    if route not in ("H2D", "D2H"):
        return "none"
    ends = _ENDS.search(name)
    if ends is None:
        return "unknown"
    host = ends.group(1) if route == "H2D" else ends.group(2)
    return _MEMORY.get(host.lower(), "unknown")


def _intervals(frame: pd.DataFrame) -> Intervals:
    start = frame["ts"].to_numpy(dtype=np.float64)
    return merge(start, start + np.nan_to_num(frame["dur"].to_numpy(dtype=np.float64)))


def _launchers(model: TraceModel, frame: pd.DataFrame) -> list[Launcher]:
    uids = frame["launcher"].to_numpy()
    names = np.where(uids == MISSING, "(no operator)", model.names[np.maximum(uids, 0)])
    table = pd.DataFrame({"name": names.astype(str), "dur": frame["dur"].to_numpy(dtype=float)})
    stats = table.groupby("name", sort=False)["dur"].agg(["size", "sum"])
    stats = stats.sort_values("sum", ascending=False, kind="stable").head(TOP_LAUNCHERS)
    return [
        Launcher(name=str(n), count=int(r["size"]), time_us=round(float(r["sum"]), 3))
        for n, r in stats.iterrows()
    ]


def _group(
    model: TraceModel, name: str, frame: pd.DataFrame, hiding: Intervals, where: _Where
) -> CopyGroup:
    nbytes = model.events["bytes"].loc[frame.index].to_numpy(dtype=np.float64)
    known = nbytes > 0
    route = copy_route(name)
    rows = where.rows(frame)
    dur = where.dur[rows]
    return CopyGroup(
        name=name,
        route=route,
        host_memory=host_memory(name, route),
        count=len(frame),
        time_us=round(float(dur.sum()), 3),
        bytes=int(nbytes[known].sum()),
        with_bytes=int(known.sum()),
        exposed_us=round(subtract(_intervals(frame), hiding).length(), 3),
        launchers=_launchers(model, frame),
        sources=sources(where.sources.iloc[rows], dur, where.exposed[rows]),
        timing=timing(where.phase[rows], dur, where.exposed[rows], where.idle),
    )


class _Where:
    """Per copy of the timeline: its duration, exposed time, phase and source (columns)."""

    def __init__(
        self, model: TraceModel, copies: pd.DataFrame, hiding: Intervals, idle: IdleBreakdown | None
    ) -> None:
        start = copies["ts"].to_numpy(dtype=np.float64)
        self.dur = np.nan_to_num(copies["dur"].to_numpy(dtype=np.float64))
        self.exposed = exposed_each(start, start + self.dur, hiding)
        self.phase = phase_of(start, idle)
        self.sources = event_sources(model, copies)
        self.idle = idle
        self._position = pd.Series(np.arange(len(copies)), index=copies.index)

    def rows(self, frame: pd.DataFrame) -> np.ndarray:
        return self._position.loc[frame.index].to_numpy()


def copy_data(
    model: TraceModel, *, include_unlinked: bool = False, idle: IdleBreakdown | None = None
) -> CopyData:
    """The copies, memsets and collectives of the events the GPU timeline counts; with the
    run's idle breakdown, each group's phases and count per steady iteration."""
    gpu = model.gpu
    use = gpu if include_unlinked else gpu[gpu["linked"].to_numpy()]
    bucket = use["bucket"].to_numpy()
    copies = use[bucket == "memcpy"]
    hiding = _intervals(use[bucket != "memcpy"])  # computation and collectives
    where = _Where(model, copies, hiding, idle)
    groups = [
        _group(model, str(name), frame, hiding, where)
        for name, frame in copies.groupby("name", sort=False, observed=True)
    ]
    groups.sort(key=lambda g: (-g.exposed_us, -g.time_us, g.name))
    memsets = use[use["cat"].to_numpy() == MEMSET]
    set_bytes = model.events["bytes"].loc[memsets.index].to_numpy(dtype=np.float64)
    return CopyData(
        groups=groups,
        memsets=MemsetSummary(
            count=len(memsets),
            time_us=round(float(np.nan_to_num(memsets["dur"].to_numpy(dtype=float)).sum()), 3),
            bytes=int(set_bytes[set_bytes > 0].sum()),
        ),
        time_us=round(_intervals(copies).length(), 3),
        exposed_us=round(subtract(_intervals(copies), hiding).length(), 3),
        steady=idle is not None and idle.phases is not None and bool(idle.phases.steady),
        collectives=collective_groups(model, use, idle),
    )
