"""What-if changes built from trace events: host spans removed, GPU events made faster,
collectives overlapped.

Each returns a `Changes` for `replay`; `combined` applies several at once (their factors
multiply, their removed spans add up), so the prediction of fixes together is one replay, not
a sum of savings.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..trace.intervals import merge
from ..trace.model import TraceModel
from .graph import ReplayGraph
from .simulate import Changes


def host_spans_removed(
    model: TraceModel,
    graph: ReplayGraph,
    uids: Iterable[int],
    label: str,
    *,
    keep_gpu: bool = False,
) -> Changes:
    """The host code of events `uids` removed (a loader's `__next__`, an `.item()`, an
    optimizer step): the time between calls inside them, the calls themselves (none of them
    waits any more) and, unless `keep_gpu` (the work moves elsewhere, as a loader's to its
    workers, and its copies and kernels still run), the GPU work those calls launched."""
    spans = _spans(model, uids)
    inside = _calls_inside(graph, spans)
    launched = (graph.gpu.launch >= 0) & inside[np.maximum(graph.gpu.launch, 0)]
    return Changes(
        gpu_scale=None if keep_gpu else np.where(launched, 0.0, 1.0),
        host_removed=spans,
        host_scale=np.where(inside, 0.0, 1.0),
        label=label,
        host_unblocked=inside,
    )


def calls_made_async(
    model: TraceModel, graph: ReplayGraph, uids: Iterable[int], factor: float, label: str
) -> Changes:
    """The calls inside host events `uids` (a `.to()` from pageable memory, a blocking copy)
    wait no more, and what they launched takes `factor` of its time: a copy made async and
    pinned (the factor: the pageable copy's bandwidth over the pinned one's)."""
    inside = _calls_inside(graph, _spans(model, uids))
    launched = (graph.gpu.launch >= 0) & inside[np.maximum(graph.gpu.launch, 0)]
    return Changes(gpu_scale=np.where(launched, factor, 1.0), label=label, host_unblocked=inside)


def _spans(model: TraceModel, uids: Iterable[int]) -> tuple[tuple[int, float, float], ...]:
    """(thread code, start, end) of each host event, in trace µs."""
    ev = model.events
    ts, dur = ev["ts"].to_numpy(float), ev["dur"].to_numpy(float)
    return tuple((int(model.thread_code[u]), float(ts[u]), float(ts[u] + dur[u])) for u in uids)


def _calls_inside(graph: ReplayGraph, spans: tuple[tuple[int, float, float], ...]) -> np.ndarray:
    """Per host call of the graph: whether it lies wholly inside one of the spans (per
    thread, the spans merged and each call found among them by one search)."""
    host = graph.host
    inside = np.zeros(len(host.uid), dtype=bool)
    if not spans:
        return inside
    cut = np.asarray(spans, dtype=float)
    for thread in np.unique(cut[:, 0]).tolist():
        on = np.flatnonzero(host.thread == thread)
        mine = merge(cut[cut[:, 0] == thread, 1], cut[cut[:, 0] == thread, 2])
        k = np.searchsorted(mine.start, host.start[on], side="right") - 1
        end = host.start[on] + host.dur[on]
        inside[on] = (k >= 0) & (end <= mine.end[np.maximum(k, 0)])
    return inside


def host_spans_shortened(
    model: TraceModel, graph: ReplayGraph, uids: Iterable[int], keep: float, label: str
) -> Changes:
    """The host code of events `uids` made faster, keeping `keep` of its time: the calls
    inside and the host work before each of them (operators dispatched faster, a leaner
    optimizer step); what they launch and what they wait for stay."""
    inside = _calls_inside(graph, _spans(model, uids))
    factor = np.where(inside, keep, 1.0)
    return Changes(host_scale=factor, label=label, gap_scale=factor)


def gpu_events_scaled(
    graph: ReplayGraph, uids: Iterable[int], factor: float, label: str
) -> Changes:
    """The GPU events `uids` take `factor` of their recorded time (0.5: twice as fast)."""
    scale = np.where(np.isin(graph.gpu.uid, np.fromiter(uids, dtype=np.int64)), factor, 1.0)
    return Changes(gpu_scale=scale, label=label)


def waits_released(graph: ReplayGraph, uids: Iterable[int], share: float, label: str) -> Changes:
    """The GPU events `uids` (collectives) hold the events of other streams that wait for them
    only for `share` of their time (0: overlapped with the work after them, as when gradients
    are reduced in buckets during the backward)."""
    hit = np.isin(graph.gpu.uid, np.fromiter(uids, dtype=np.int64))
    return Changes(release=np.where(hit, share, 1.0), label=label)


def combined(graph: ReplayGraph, changes: Iterable[Changes]) -> Changes:
    gpu = np.ones(len(graph.gpu.uid))
    host = np.ones(len(graph.host.uid))
    unblocked = np.zeros(len(graph.host.uid), dtype=bool)
    gaps = np.ones(len(graph.host.uid))
    release = np.ones(len(graph.gpu.uid))
    removed: list[tuple[int, float, float]] = []
    labels = []
    for c in changes:
        gpu = gpu * (1.0 if c.gpu_scale is None else c.gpu_scale)
        host = host * (1.0 if c.host_scale is None else c.host_scale)
        unblocked |= False if c.host_unblocked is None else c.host_unblocked
        gaps = gaps * (1.0 if c.gap_scale is None else c.gap_scale)
        release = release * (1.0 if c.release is None else c.release)
        removed.extend(c.host_removed)
        labels.append(c.label)
    return Changes(gpu, tuple(removed), host, " + ".join(labels), unblocked, gaps, release)


def outermost(spans: np.ndarray, ts: np.ndarray, dur: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """The spans (uids) not inside another of them on their thread, in (thread, start)
    order: none is changed twice."""
    order = spans[np.lexsort((-dur[spans], ts[spans], thread[spans]))]
    reach: dict[int, float] = {}
    kept = []
    for u in order.tolist():
        t = int(thread[u])
        if ts[u] >= reach.get(t, -np.inf):
            reach[t] = ts[u] + dur[u]
            kept.append(u)
    return np.asarray(kept, dtype=np.int64)
