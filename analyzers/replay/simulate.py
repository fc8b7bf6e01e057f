"""Re-time a replay graph from its recorded durations: one pass in the order the events were
recorded, each event placed as soon as everything it waited for allows.

Host work keeps its own time: a call starts its recorded gap after the previous call on its
thread ended, and lasts its recorded duration unless it waited for the GPU (then it ends
`residual` after that event, and no sooner than its own floor). A GPU event starts when its
launch has happened (plus the launch delay), its queue is free and any event it waited for
has ended. Every edge points from an earlier recorded moment to a later one, so one pass in
recorded order places each event after all it depends on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..trace.intervals import length_before, merge
from .graph import ReplayGraph

HOST_START, BLOCKING_END, GPU_START = 1, 0, 2  # tie order at one instant


@dataclass(frozen=True)
class Changes:
    """What differs from the recording: a factor on each GPU event's duration, host time
    removed from the gaps between calls (per thread code, [start, end) in trace µs), a factor
    on each host call's own time, the blocking calls that no longer wait, and a factor on the
    host work before each call."""

    gpu_scale: np.ndarray | None = None
    host_removed: tuple[tuple[int, float, float], ...] = ()
    host_scale: np.ndarray | None = None
    label: str = field(default="identity")
    host_unblocked: np.ndarray | None = None
    gap_scale: np.ndarray | None = None  # a factor on the host work before each call
    # per GPU event, the share of its time after which the events of other streams waiting
    # for it may start (0: a collective fully overlapped); its own stream and the host still
    # wait for its end
    release: np.ndarray | None = None


IDENTITY = Changes()


# what set a GPU event's start: its launch, its stream's previous event, another stream's event
BY_LAUNCH, BY_QUEUE, BY_OTHER_STREAM, BY_RECORDING = 0, 1, 2, 3


@dataclass(frozen=True)
class Replayed:
    """Replayed times (trace µs) and, for the critical path, what set each one: whether a
    blocking call's end was set by the GPU event it waited for, and what set each GPU start."""

    host_start: np.ndarray
    host_end: np.ndarray
    gpu_start: np.ndarray
    gpu_end: np.ndarray
    host_waited: np.ndarray
    gpu_set_by: np.ndarray

    @property
    def end(self) -> float:
        return float(max(self.host_end.max(initial=-np.inf), self.gpu_end.max(initial=-np.inf)))


def replay(graph: ReplayGraph, changes: Changes = IDENTITY) -> Replayed:
    host, gpu = graph.host, graph.gpu
    gap = _gaps(graph, changes.host_removed)
    woken = host.woken_by if host.woken_by is not None else np.full(len(host.start), -1)
    handed = _hand_off_delays(graph, woken, changes.host_removed)
    if changes.gap_scale is not None:
        gap = gap * changes.gap_scale
        handed = handed * changes.gap_scale
    hscale = np.ones(len(host.start)) if changes.host_scale is None else changes.host_scale
    gscale = np.ones(len(gpu.start)) if changes.gpu_scale is None else changes.gpu_scale
    own = (np.where(host.waits_for >= 0, host.floor, host.dur) * hscale).tolist()
    floor = (host.floor * hscale).tolist()
    gdur = (gpu.dur * gscale).tolist()
    held_for = gdur if changes.release is None else (gpu.dur * gscale * changes.release).tolist()
    blocking = host.waits_for.copy()
    if changes.host_unblocked is not None and changes.host_unblocked.any():
        blocking[changes.host_unblocked] = -1
        order = _node_order(graph, blocking)
    else:
        order = graph.orders.get("all waiting")
        if order is None:
            order = graph.orders["all waiting"] = _node_order(graph, blocking)
    n_host = len(host.start)
    hs, he = [0.0] * n_host, [0.0] * n_host
    gs, ge, gr = [0.0] * len(gpu.start), [0.0] * len(gpu.start), [0.0] * len(gpu.start)
    first_call = np.r_[True, host.thread[1:] != host.thread[:-1]].tolist()
    first_gpu = np.r_[True, gpu.queue[1:] != gpu.queue[:-1]].tolist()
    rec_host, rec_gpu = host.start.tolist(), gpu.start.tolist()
    rec_gpu_end = (gpu.start + gpu.dur).tolist()
    waits, residual, gaps = blocking.tolist(), host.residual.tolist(), gap.tolist()
    at_start = [False] * n_host if host.waits_start is None else host.waits_start.tolist()
    woken_by, handed_gap = woken.tolist(), handed.tolist()
    launch, delay, after = gpu.launch.tolist(), gpu.delay.tolist(), gpu.after.tolist()
    gaps_gpu = gpu.stream_gap.tolist()
    waited, set_by = [False] * n_host, [BY_RECORDING] * len(gpu.start)
    grouped = _Groups(gpu.group, changes.release) if gpu.group is not None else None
    for kind, i in order:
        if kind == HOST_START:
            if first_call[i]:
                hs[i] = rec_host[i]
            elif woken_by[i] >= 0:  # handed over: after the later of the two calls
                hs[i] = max(he[i - 1], he[woken_by[i]]) + handed_gap[i]
            else:
                hs[i] = he[i - 1] + gaps[i]
            if waits[i] < 0:
                he[i] = hs[i] + own[i]
        elif kind == BLOCKING_END:
            gpu_done = (gs if at_start[i] else ge)[waits[i]] + residual[i]
            waited[i] = gpu_done >= hs[i] + floor[i]
            he[i] = gpu_done if waited[i] else hs[i] + floor[i]
        else:
            ready, by = _gpu_ready(i, first_gpu[i], launch[i], rec_gpu, rec_gpu_end, ge, gaps_gpu)
            if launch[i] >= 0 and hs[launch[i]] + delay[i] >= ready:
                ready, by = hs[launch[i]] + delay[i], BY_LAUNCH
            if after[i] >= 0 and gr[after[i]] > ready:
                ready, by = gr[after[i]], BY_OTHER_STREAM
            gs[i], ge[i], gr[i], set_by[i] = ready, ready + gdur[i], ready + held_for[i], by
            if grouped is not None and grouped.of[i] >= 0:
                grouped.arrive(i, gs, ge, gr, gdur)
    return Replayed(
        np.asarray(hs), np.asarray(he), np.asarray(gs), np.asarray(ge),
        np.asarray(waited), np.asarray(set_by, dtype=np.int8),
    )  # fmt: skip


class _Groups:
    """Collectives matched across ranks, completed as their members are placed: each member
    keeps its own start (its rank's arrival); once the last member is placed, every member
    ends at the latest arrival plus the shortest member's (changed) time, the transfer that
    the last rank to arrive did not wait through."""

    def __init__(self, group: np.ndarray, release: np.ndarray | None) -> None:
        self.of = group.tolist()
        sizes = np.bincount(group[group >= 0]) if (group >= 0).any() else np.zeros(0, int)
        self.left = sizes.tolist()
        self.members: list[list[int]] = [[] for _ in self.left]
        self.release = None if release is None else release.tolist()

    def arrive(self, i: int, gs: list, ge: list, gr: list, gdur: list) -> None:
        g = self.of[i]
        self.members[g].append(i)
        self.left[g] -= 1
        if self.left[g]:
            return
        members = self.members[g]
        done = max(gs[k] for k in members) + min(gdur[k] for k in members)
        for k in members:
            ge[k] = done
            share = 1.0 if self.release is None else self.release[k]
            gr[k] = gs[k] + share * (done - gs[k])


def _gpu_ready(i, first, launch, rec_start, rec_end, ge, stream_gap) -> tuple[float, int]:
    """When GPU event `i`'s queue lets it start, and whether that was its queue or the
    recording (the first event of a queue, or one with no launch, keeps its recorded place)."""
    if first:
        return (rec_start[i], BY_RECORDING) if launch < 0 else (-np.inf, BY_RECORDING)
    if launch < 0:  # unlinked: keeps its recorded distance behind its queue
        return ge[i - 1] + (rec_start[i] - rec_end[i - 1]), BY_QUEUE
    return ge[i - 1] + stream_gap[i], BY_QUEUE


def _node_order(graph: ReplayGraph, waits_for: np.ndarray) -> list[tuple[int, int]]:
    """(kind, index) of every node, in recorded time; ties broken by HOST_START < GPU_START and
    a blocking end before both."""
    host, gpu = graph.host, graph.gpu
    blocking = np.flatnonzero(waits_for >= 0)
    times = np.concatenate([host.start, (host.start + host.dur)[blocking], gpu.start])
    kinds = np.concatenate(
        [
            np.full(len(host.start), HOST_START),
            np.full(len(blocking), BLOCKING_END),
            np.full(len(gpu.start), GPU_START),
        ]
    )
    index = np.concatenate([np.arange(len(host.start)), blocking, np.arange(len(gpu.start))])
    order = np.lexsort((kinds, times))
    return list(zip(kinds[order].tolist(), index[order].tolist(), strict=True))


def _gaps(graph: ReplayGraph, removed: tuple[tuple[int, float, float], ...]) -> np.ndarray:
    """Each call's gap less the removed host time that falls inside it (per thread, the
    removed spans merged and measured against every gap in two searches)."""
    host = graph.host
    gap = host.gap.copy()
    if not removed:
        return gap
    spans = np.asarray(removed, dtype=float)
    gap_start = host.start - host.gap
    for thread in np.unique(spans[:, 0]).tolist():
        on = np.flatnonzero(host.thread == thread)
        mine = spans[spans[:, 0] == thread]
        cut = merge(mine[:, 1], mine[:, 2])
        gap[on] -= length_before(cut, host.start[on]) - length_before(cut, gap_start[on])
    return np.maximum(gap, 0.0)


def _hand_off_delays(
    graph: ReplayGraph, woken: np.ndarray, removed: tuple[tuple[int, float, float], ...]
) -> np.ndarray:
    """Per handed-over call: the recorded time from the handing call's end to its start, less
    the removed host time of its own thread in between (0 for the other calls)."""
    host = graph.host
    out = np.zeros(len(host.start))
    on = np.flatnonzero(woken >= 0)
    if len(on) == 0:
        return out
    since = (host.start + host.dur)[woken[on]]
    out[on] = host.start[on] - since
    if removed:
        spans = np.asarray(removed, dtype=float)
        for thread in np.unique(spans[:, 0]).tolist():
            mine = on[host.thread[on] == thread]
            cut = merge(*spans[spans[:, 0] == thread, 1:].T)
            lo = (host.start + host.dur)[woken[mine]]
            out[mine] -= length_before(cut, host.start[mine]) - length_before(cut, lo)
    return np.maximum(out, 0.0)


def map_time(
    graph: ReplayGraph, replayed: Replayed, thread: int, t: float, removed: Removed = ()
) -> float:
    """Where a recorded instant on `thread` falls in the replay (see `map_times`)."""
    return float(map_times(graph, replayed, thread, np.asarray([t], dtype=float), removed)[0])


def map_times(
    graph: ReplayGraph, replayed: Replayed, thread: int, t: np.ndarray, removed: Removed = ()
) -> np.ndarray:
    """Where recorded instants on `thread` fall in the replay: inside a call, at the same
    offset from its start (at most its end); between calls, at the same offset from the end of
    the call before, less the host time `removed` in between (before the first call, the same
    offset before it)."""
    host = graph.host
    on = np.flatnonzero(host.thread == thread)
    if len(on) == 0:
        return t.copy()
    starts = host.start[on]
    k = np.searchsorted(starts, t, side="right") - 1
    i = on[np.maximum(k, 0)]
    end = host.start[i] + host.dur[i]
    cut = _cut(removed, thread)
    inside = np.minimum(replayed.host_start[i] + (t - host.start[i]), replayed.host_end[i])
    after = replayed.host_end[i] + np.maximum(0.0, (t - end) - _between(cut, end, t))
    ahead = starts[0] - t
    before = replayed.host_start[on[0]] - np.maximum(0.0, ahead - _between(cut, t, starts[0]))
    return np.where(k < 0, before, np.where(t <= end, inside, after))


Removed = tuple[tuple[int, float, float], ...]


def _cut(removed: Removed, thread: int):
    spans = [(lo, hi) for th, lo, hi in removed if th == thread]
    if not spans:
        return None
    lo, hi = np.asarray(spans, dtype=float).T
    return merge(lo, hi)


def _between(cut, lo: np.ndarray | float, hi: np.ndarray | float) -> np.ndarray | float:
    """Removed host time inside [lo, hi) (0 with nothing removed)."""
    if cut is None:
        return 0.0
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    return np.maximum(0.0, length_before(cut, np.maximum(hi, lo)) - length_before(cut, lo))
