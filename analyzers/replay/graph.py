"""The dependency graph of a trace, as columns: what each host call and GPU event waited for.

Host side: per thread, the runtime/driver calls in program order (a call nested in another is
folded into the outer one), with the host work between them kept as recorded gaps. GPU side:
per queue (device and stream), the events in the order they ran. The edges:

- launch -> GPU event (the correlation link): an event starts no sooner than `delay` after
  its launch began; the delay is the recorded one, capped at the trace's usual launch delay;
- the queue: an event launched before the one before it on its stream ended was queued; it
  starts no sooner than `stream_gap` after that one ended (its recorded gap, at most twice the
  device's usual gap; an event not queued gets the usual gap);
- a blocking call (a synchronise, a blocking copy, a free that synchronises) ends no sooner
  than `residual` after the GPU event it waited for ended, and no sooner than its own `floor`;
- a GPU event that started later than all of the above, right after an event of another queue
  ended, waited for it (a cross-stream event wait);
- a call after a long gap on its thread, in which another thread made calls, was handed over
  by the last of them (the main thread resuming after the autograd thread's backward, the
  autograd thread starting once the forward is launched): it starts as long after the later of
  its own thread's previous call and that call as it did in the trace.

What a trace does not record is assumed, and each assumption is named in `assumptions` with
how much time it covers (docs/what-if.md#assumptions).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..trace.columns import MISSING
from ..trace.model import TraceModel
from ..trace.schema import GPU_CATEGORIES, LAUNCH_CATEGORIES

HAND_OFF_GAP_US = 50.0  # a gap this long on a thread may have been a wait for another thread
QUEUED_GAP_US = 2.0  # an event this close behind its queue's previous one was queued behind it
WAIT_RETURN_US = 50.0  # a blocking call that returns this soon after a GPU event waited for it
OWN_FLOOR_US = 10.0  # what a blocking call costs when there is nothing to wait for
CROSS_STREAM_US = 5.0  # a late start this soon after another queue's event ended waited for it
CROSS_STREAM_SCAN = 64  # events ending together looked through at most (equal times stay linear)
DELAY_PERCENTILE = 90.0  # the usual launch delay: this percentile over events not queued
MIN_LINKED_SHARE = 0.5  # below this share of GPU events with a launch, the graph is not built


class CannotReplay(Exception):
    """The trace lacks what the graph needs (the message says what)."""


@dataclass(frozen=True)
class Assumption:
    """A rule applied where the trace records no dependency, and the time it covers."""

    rule: str
    events: int
    us: float


@dataclass(frozen=True)
class HostCalls:
    """Outer runtime/driver calls, sorted by thread then start; `thread` is a dense code."""

    uid: np.ndarray
    thread: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    gap: np.ndarray  # host time since the previous call on the thread ended (0 for the first)
    waits_for: np.ndarray  # GPU event (index into GpuEvents) the call waited for, or -1
    floor: np.ndarray  # a blocking call's own cost; its whole duration for any other call
    residual: np.ndarray  # a blocking call's return after the event it waited for ended
    # the call of another thread this one was handed over by (-1: none): the last call another
    # thread ended in this call's long gap; the call starts `gap` after the later of the two
    woken_by: np.ndarray | None = None


@dataclass(frozen=True)
class GpuEvents:
    """GPU events sorted by queue then start."""

    uid: np.ndarray
    queue: np.ndarray
    start: np.ndarray
    dur: np.ndarray
    launch: np.ndarray  # index into HostCalls, or -1
    delay: np.ndarray  # launch start to event start, as modelled
    stream_gap: np.ndarray  # after the queue's previous event
    after: np.ndarray  # event of another queue it waited for, or -1
    held: np.ndarray  # started late for no recorded cause: its recorded gap or delay is kept


@dataclass(frozen=True)
class ReplayGraph:
    host: HostCalls
    gpu: GpuEvents
    usual_delay_us: float
    assumptions: tuple[Assumption, ...]
    # the replay's node order while every blocking call still waits (simulate.py), kept so
    # the many replays of one graph sort its events once
    orders: dict[str, list[tuple[int, int]]] = field(default_factory=dict, compare=False)


def build_graph(model: TraceModel) -> ReplayGraph:
    """The graph of the recorded events (grafted capture rows and pseudo ops left out)."""
    ev = model.recorded
    n = len(ev)
    cat = ev["cat"]
    is_call = cat.isin(LAUNCH_CATEGORIES).to_numpy() & (ev["ph"] == "X").to_numpy()
    is_gpu = cat.isin(GPU_CATEGORIES).to_numpy()
    if not is_gpu.any():
        raise CannotReplay("the trace records no GPU event")
    launch_uid = model.links.launch[:n]
    linked = np.mean(launch_uid[is_gpu] != MISSING)
    if linked < MIN_LINKED_SHARE:
        raise CannotReplay(
            f"only {linked:.0%} of the GPU events are linked to a launch (a GPU-only trace, or "
            "one recorded without correlation ids): the host side cannot be replayed"
        )
    ts, dur = ev["ts"].to_numpy(float), ev["dur"].to_numpy(float)
    dur = np.where(np.isfinite(dur), np.maximum(dur, 0.0), 0.0)
    host, outer_of = _host_calls(np.flatnonzero(is_call), model.thread_code[:n], ts, dur)
    gpu_uid = np.flatnonzero(is_gpu)
    queue = _queues(ev, gpu_uid)
    order = np.lexsort((ts[gpu_uid], queue))
    gpu_uid, queue = gpu_uid[order], queue[order]
    launch = np.full(len(gpu_uid), -1, dtype=np.int64)
    has = launch_uid[gpu_uid] != MISSING
    launch[has] = outer_of[launch_uid[gpu_uid[has]]]
    gpu, usual, late = _gpu_events(gpu_uid, queue, ts, dur, launch, host.start)
    host, waited = _blocking(host, gpu)
    host, handed = _hand_offs(host)
    assumptions = (
        Assumption("a late start right after another stream's event waited for it", *late[0]),
        Assumption("a late start with no recorded cause keeps its recorded gap or delay", *late[1]),
        Assumption("a call that returned right after a GPU event ended waited for it", *waited),
        Assumption(
            "a call after a long gap waited for the last call another thread made in it", *handed
        ),
    )
    return ReplayGraph(host, gpu, usual, assumptions)


def _host_calls(
    uids: np.ndarray, thread: np.ndarray, ts: np.ndarray, dur: np.ndarray
) -> tuple[HostCalls, np.ndarray]:
    """Outer calls per thread, and for every uid the outer call holding it (-1 elsewhere)."""
    th = thread[uids]
    order = np.lexsort((-dur[uids], ts[uids], th))
    uids, th = uids[order], th[order]
    start, end = ts[uids], ts[uids] + dur[uids]
    new_thread = np.r_[True, th[1:] != th[:-1]]
    # running end per thread: a call starting before it is nested in an earlier call
    reach = pd.Series(end).groupby(th).cummax().to_numpy()
    prev_reach = np.r_[-np.inf, reach[:-1]]
    prev_reach[new_thread] = -np.inf
    outer = start >= prev_reach
    group = np.cumsum(outer) - 1
    outer_of = np.full(len(ts), -1, dtype=np.int64)
    outer_of[uids] = group
    o = np.flatnonzero(outer)
    ostart, oend = start[o], np.maximum(end[o], pd.Series(end).groupby(group).max().to_numpy())
    first = np.r_[True, th[o][1:] != th[o][:-1]]
    gap = np.where(first, 0.0, ostart - np.r_[0.0, oend[:-1]])
    count = len(o)
    calls = HostCalls(
        uid=uids[o],
        thread=th[o],
        start=ostart,
        dur=oend - ostart,
        gap=np.maximum(gap, 0.0),
        waits_for=np.full(count, -1, dtype=np.int64),
        floor=oend - ostart,
        residual=np.zeros(count),
    )
    return calls, outer_of


def _queues(ev: pd.DataFrame, uids: np.ndarray) -> np.ndarray:
    """A dense code per (process, stream) of each GPU event (Kineto's tid is the stream)."""
    pid = ev["pid"].to_numpy()[uids]
    tid = ev["tid"].to_numpy()[uids]
    return pd.factorize(pd.MultiIndex.from_arrays([pid, tid]))[0].astype(np.int64)


def _gpu_events(
    uid: np.ndarray,
    queue: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    launch: np.ndarray,
    host_start: np.ndarray,
) -> tuple[GpuEvents, float, tuple[tuple[int, float], tuple[int, float]]]:
    """Queue, launch and cross-stream edges. An event launched before the previous one on its
    stream ended was queued behind it; one launched onto an idle stream shows the launch delay
    (the usual one: DELAY_PERCENTILE over those)."""
    start, length = ts[uid], dur[uid]
    end = start + length
    first = np.r_[True, queue[1:] != queue[:-1]]
    prev_end = np.where(first, -np.inf, np.r_[-np.inf, end[:-1]])
    behind = start - prev_end
    has = launch >= 0
    launched_at = np.where(has, host_start[np.maximum(launch, 0)], np.nan)
    queued = ~first & np.where(has, launched_at < prev_end, True)
    gaps = np.clip(behind[queued], 0.0, None)
    device_gap = float(np.median(gaps)) if len(gaps) else 0.0
    gap_cap = max(QUEUED_GAP_US, 2.0 * device_gap)
    stream_gap = np.where(queued, np.clip(behind, 0.0, gap_cap), np.where(first, 0.0, device_gap))
    recorded_delay = np.where(has, start - launched_at, 0.0)
    free = has & ~queued
    usual = float(np.percentile(recorded_delay[free], DELAY_PERCENTILE)) if free.any() else 0.0
    delay = np.where(has, np.clip(recorded_delay, 0.0, usual), 0.0)
    ready = np.maximum(np.where(has, launched_at + delay, -np.inf), prev_end + stream_gap)
    late = (start - ready > QUEUED_GAP_US) & (has | queued)
    after = np.full(len(uid), -1, dtype=np.int64)
    cross = _cross_stream(start, end, queue, np.flatnonzero(late))
    after[cross[0]] = cross[1]
    kept = late.copy()
    kept[cross[0]] = False
    # no recorded cause: a queued event keeps its gap behind the one before, any other its delay
    stream_gap = np.where(kept & queued, behind, stream_gap)
    delay = np.where(kept & ~queued & has, recorded_delay, delay)
    lateness = start - ready
    held = kept
    gpu = GpuEvents(uid, queue, start, length, launch, delay, stream_gap, after, held)
    found = ((len(cross[0]), float(lateness[cross[0]].sum())),)
    found += ((int(kept.sum()), float(lateness[kept].sum())),)
    return gpu, usual, found  # type: ignore[return-value]


def _cross_stream(
    start: np.ndarray, end: np.ndarray, queue: np.ndarray, late: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For late events, the event of another queue that ended latest just before each
    started (within CROSS_STREAM_US)."""
    by_end = np.argsort(end, kind="stable")
    ends = end[by_end]
    at = np.searchsorted(ends, start[late], side="right") - 1
    found, source = [], []
    for i, j in zip(late.tolist(), at.tolist(), strict=True):
        for k in range(j, max(j - CROSS_STREAM_SCAN, -1), -1):
            if start[i] - ends[k] > CROSS_STREAM_US:
                break
            other = by_end[k]
            if queue[other] != queue[i]:
                found.append(i)
                source.append(other)
                break
    return np.asarray(found, dtype=np.int64), np.asarray(source, dtype=np.int64)


def _hand_offs(host: HostCalls) -> tuple[HostCalls, tuple[int, float]]:
    """Per call whose gap is at least HAND_OFF_GAP_US: the call of another thread that ended
    last inside the gap, if any (a thread's own calls never overlap, so any call ending
    inside the gap is another thread's)."""
    end = host.start + host.dur
    by_end = np.argsort(end, kind="stable")
    ends = end[by_end]
    at = np.searchsorted(ends, host.start, side="right") - 1
    last = by_end[np.maximum(at, 0)]
    gap_start = host.start - host.gap
    woken = (
        (host.gap >= HAND_OFF_GAP_US)
        & (at >= 0)
        & (ends[np.maximum(at, 0)] > gap_start)
        & (host.thread[last] != host.thread)
    )
    woken_by = np.where(woken, last, -1)
    covered = float((end[last] - gap_start)[woken].sum())  # the gap taken as a wait
    return replace(host, woken_by=woken_by), (int(woken.sum()), covered)


def _blocking(host: HostCalls, gpu: GpuEvents) -> tuple[HostCalls, tuple[int, float]]:
    """Calls that returned within WAIT_RETURN_US of a GPU event's end that they overlapped,
    launched before they began (or by the call itself: a blocking copy): they waited for it."""
    end = gpu.start + gpu.dur
    by_end = np.argsort(end, kind="stable")
    ends = end[by_end]
    call_end = host.start + host.dur
    at = np.searchsorted(ends, call_end, side="right") - 1
    ok = at >= 0
    cand = by_end[np.maximum(at, 0)]
    gpu_end = ends[np.maximum(at, 0)]
    own = gpu.launch[cand] == np.arange(len(host.start))  # a blocking copy waits for its copy
    launched_before = np.where(
        gpu.launch[cand] >= 0, host.start[np.maximum(gpu.launch[cand], 0)] < host.start, True
    )
    waited = (
        ok
        & (gpu_end >= host.start)
        & (call_end - gpu_end <= WAIT_RETURN_US)
        & (launched_before | own)
    )
    waits_for = np.where(waited, cand, -1)
    residual = np.where(waited, call_end - gpu_end, 0.0)
    floor = np.where(waited, np.minimum(host.dur, OWN_FLOOR_US), host.dur)
    covered = float((gpu_end - host.start)[waited].sum())
    updated = replace(host, waits_for=waits_for, floor=floor, residual=residual)
    return updated, (int(waited.sum()), covered)
