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
- a stream wait the trace records (CUPTI's "Stream Wait Event", written when PyTorch's
  profiler runs with enable_cuda_sync_events): the first event launched onto the waiting
  stream after the `cudaStreamWaitEvent` call waits for the last event launched onto the
  recording stream before the `cudaEventRecord` call it names;
- a GPU event that started later than all of the above, right after an event of another queue
  ended, waited for it (a cross-stream event wait, assumed where none is recorded);
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
    # whether the call waited for its event's start, not its end (a launch into a full queue
    # returns when a slot frees: the event after the one it would otherwise wait for begins)
    waits_start: np.ndarray | None = None


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
    recorded: np.ndarray  # whether that wait is recorded by the trace (else inferred)
    held: np.ndarray  # started late for no recorded cause: its recorded gap or delay is kept
    # a collective matched across the ranks of a job (job/joint_replay.py): its group, or -1; every
    # member ends when the last has started plus the shortest member's time (the transfer)
    group: np.ndarray | None = None


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
    waits = _recorded_waits(ev, launch_uid, gpu_uid, queue, ts, dur)
    gpu, usual, late = _gpu_events(gpu_uid, queue, ts, dur, launch, host.start, waits)
    host, waited = _blocking(host, gpu)
    host, handed = _hand_offs(host)
    assumptions = (
        Assumption(
            "a late start right after another stream's event waited for it (no stream wait "
            "recorded)",
            *late[0],
        ),
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
    recorded: np.ndarray,
) -> tuple[GpuEvents, float, tuple[tuple[int, float], tuple[int, float]]]:
    """Queue, launch and cross-stream edges (`recorded`: the event of another queue each one
    waited for by the trace's own record, or -1). An event launched before the previous one
    on its stream ended was queued behind it; one launched onto an idle stream shows the
    launch delay (the usual one: DELAY_PERCENTILE over those)."""
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
    known = recorded >= 0
    # the usual delay is the launch's own: events a stream wait held back (recorded, or
    # starting right as another queue's event ended) say nothing of it
    free = has & ~queued
    plain = free & ~known & ~_right_after_another(start, end, queue)
    sample = recorded_delay[plain] if plain.any() else recorded_delay[free]
    usual = float(np.percentile(sample, DELAY_PERCENTILE)) if len(sample) else 0.0
    delay = np.where(has, np.clip(recorded_delay, 0.0, usual), 0.0)
    ready = np.maximum(np.where(has, launched_at + delay, -np.inf), prev_end + stream_gap)
    ready = np.where(known, np.maximum(ready, end[np.maximum(recorded, 0)]), ready)
    late = (start - ready > QUEUED_GAP_US) & (has | queued)
    after = recorded.copy()
    cross = _cross_stream(start, end, queue, np.flatnonzero(late & ~known))
    after[cross[0]] = cross[1]
    kept = late.copy()
    kept[cross[0]] = False
    # no recorded cause: a queued event keeps its gap behind the one before, any other its delay
    stream_gap = np.where(kept & queued, behind, stream_gap)
    delay = np.where(kept & ~queued & has, recorded_delay, delay)
    lateness = start - ready
    held = kept
    gpu = GpuEvents(uid, queue, start, length, launch, delay, stream_gap, after, known, held)
    found = ((len(cross[0]), float(lateness[cross[0]].sum())),)
    found += ((int(kept.sum()), float(lateness[kept].sum())),)
    return gpu, usual, found  # type: ignore[return-value]


def _recorded_waits(
    ev: pd.DataFrame,
    launch_uid: np.ndarray,
    gpu_uid: np.ndarray,
    queue: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
) -> np.ndarray:
    """Per GPU event (sorted by queue, then start), the event of another queue that a
    recorded stream wait made it wait for, or -1. A record whose calls or streams cannot be
    found, or that the recorded times contradict (the awaited event ending after the waiting
    one started), is left out."""
    out = np.full(len(gpu_uid), -1, dtype=np.int64)
    cat = ev["cat"].to_numpy()
    rows = np.flatnonzero(
        (cat == "cuda_sync")
        & (ev["wait_record_corr"].to_numpy() >= 0)
        & (ev["wait_on_stream"].to_numpy() >= 0)
        & (ev["correlation"].to_numpy() >= 0)
    )
    if len(rows) == 0 or len(gpu_uid) == 0:
        return out
    calls = np.flatnonzero(np.isin(cat, list(LAUNCH_CATEGORIES)))
    corr = pd.Series(ts[calls], index=ev["correlation"].to_numpy()[calls])
    corr = corr[~corr.index.duplicated(keep=False)]  # ids reused across processes: ambiguous
    device = ev["device"].to_numpy()
    stream = ev["stream"].to_numpy()
    where = pd.Series(queue, index=pd.MultiIndex.from_arrays([device[gpu_uid], stream[gpu_uid]]))
    where = where[~where.index.duplicated()]
    # per queue, the latest launch so far: a stream runs its events in the order launched
    linked = launch_uid[gpu_uid]
    launched_at = np.where(linked != MISSING, ts[np.maximum(linked, 0)], -np.inf)
    latest = pd.Series(launched_at).groupby(queue).cummax().to_numpy()
    first = np.searchsorted(queue, np.arange(queue.max() + 1), side="left")
    last = np.searchsorted(queue, np.arange(queue.max() + 1), side="right")
    end = ts[gpu_uid] + dur[gpu_uid]
    for r in rows.tolist():
        key = int(ev["wait_record_corr"].iat[r]), int(ev["correlation"].iat[r])
        if key[0] not in corr.index or key[1] not in corr.index:
            continue
        waiting = where.get((int(device[r]), int(stream[r])))
        source = where.get((int(device[r]), int(ev["wait_on_stream"].iat[r])))
        if waiting is None or source is None or waiting == source:
            continue
        lo, hi = first[waiting], last[waiting]
        consumer = lo + int(np.searchsorted(latest[lo:hi], corr[key[1]], side="left"))
        lo, hi = first[source], last[source]
        producer = lo + int(np.searchsorted(latest[lo:hi], corr[key[0]], side="left")) - 1
        if consumer >= last[waiting] or producer < first[source]:
            continue
        if end[producer] <= ts[gpu_uid[consumer]] + QUEUED_GAP_US:
            out[consumer] = producer
    return out


def _right_after_another(start: np.ndarray, end: np.ndarray, queue: np.ndarray) -> np.ndarray:
    """Per event, whether the event of any queue that ended last before it started ended
    within CROSS_STREAM_US of its start and on another queue."""
    by_end = np.argsort(end, kind="stable")
    at = np.searchsorted(end[by_end], start, side="right") - 1
    other = by_end[np.maximum(at, 0)]
    return (at >= 0) & (start - end[other] <= CROSS_STREAM_US) & (queue[other] != queue)


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
    launched before they began (or by the call itself: a blocking copy): they waited for it.
    A call that launches onto a queue and waited for that queue (a copy for its data, a
    launch for a free slot in a full queue) is taken to wait for it, whatever ended on other
    queues meanwhile; any other call waited for the last event ended on any queue."""
    end = gpu.start + gpu.dur
    call_end = host.start + host.dur
    cand, gpu_end = _last_ended(end, np.zeros(len(end), dtype=np.int64), call_end, None)
    waited = _waited(host, gpu, cand, gpu_end)
    onto = np.full(len(host.start), -1, dtype=np.int64)  # the queue a call launched onto
    linked = np.flatnonzero(gpu.launch >= 0)
    onto[gpu.launch[linked]] = gpu.queue[linked]
    launching = np.flatnonzero(onto >= 0)
    if len(launching):
        own, own_end = np.full_like(cand, -1), np.full_like(gpu_end, -np.inf)
        own[launching], own_end[launching] = _last_ended(
            end, gpu.queue, call_end[launching], onto[launching]
        )
        own_waited = _waited(host, gpu, own, own_end)
        cand = np.where(own_waited, own, cand)
        gpu_end = np.where(own_waited, own_end, gpu_end)
        # else a slot: the call returned right after an event of its queue began
        slot, slot_start = np.full_like(cand, -1), np.full_like(gpu_end, -np.inf)
        slot[launching], slot_start[launching] = _last_ended(
            gpu.start, gpu.queue, call_end[launching], onto[launching]
        )
        by_slot = ~own_waited & _waited(host, gpu, slot, slot_start, own_ok=False)
        cand = np.where(by_slot, slot, cand)
        gpu_end = np.where(by_slot, slot_start, gpu_end)
        waited = waited | own_waited | by_slot
        waits_start = by_slot
    else:
        waits_start = np.zeros(len(host.start), dtype=bool)
    waits_for = np.where(waited, cand, -1)
    residual = np.where(waited, call_end - gpu_end, 0.0)
    floor = np.where(waited, np.minimum(host.dur, OWN_FLOOR_US), host.dur)
    covered = float((gpu_end - host.start)[waited].sum())
    updated = replace(
        host, waits_for=waits_for, floor=floor, residual=residual, waits_start=waits_start
    )
    return updated, (int(waited.sum()), covered)


def _waited(
    host: HostCalls, gpu: GpuEvents, cand: np.ndarray, gpu_end: np.ndarray, own_ok: bool = True
) -> np.ndarray:
    """Whether each call waited for its candidate event (-1: none) to reach `gpu_end`
    (`own_ok`: the event the call launched may be the one)."""
    call_end = host.start + host.dur
    ok = cand >= 0
    cand = np.maximum(cand, 0)
    own = own_ok & (gpu.launch[cand] == np.arange(len(host.start)))  # a blocking copy
    launched_before = np.where(
        gpu.launch[cand] >= 0, host.start[np.maximum(gpu.launch[cand], 0)] < host.start, True
    )
    return (
        ok
        & (gpu_end >= host.start)
        & (call_end - gpu_end <= WAIT_RETURN_US)
        & (launched_before | own)
    )


def _last_ended(
    end: np.ndarray, key: np.ndarray, at: np.ndarray, wanted: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per instant `at`, the GPU event of group `wanted` (None: any) whose `end` (or any
    other per-event time: a start) came last by then, and that time (-1 and -inf where
    none had)."""
    group = np.zeros(len(at), dtype=np.int64) if wanted is None else wanted
    order = np.lexsort((end, key))
    keys, ends = key[order], end[order]
    lo = np.searchsorted(keys, group, side="left")
    hi = np.searchsorted(keys, group, side="right")
    pos = np.empty(len(at), dtype=np.int64)
    for g in np.unique(group).tolist():
        mine = np.flatnonzero(group == g)
        a, b = int(lo[mine[0]]), int(hi[mine[0]])
        pos[mine] = a + np.searchsorted(ends[a:b], at[mine], side="right") - 1
    found = pos >= lo
    cand = np.where(found, order[np.maximum(pos, 0)], -1)
    return cand, np.where(found, ends[np.maximum(pos, 0)], -np.inf)
