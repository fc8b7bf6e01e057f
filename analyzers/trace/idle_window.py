"""The GPU work the timeline counts, its window and the idle intervals inside it.

`gpu_work` selects exactly the GPU events `gpu_timeline` pools (linked ones unless told
otherwise), so the idle set here has the length of the timeline's `idle_time` (see
docs/analysis.md#host-side). `length_before` measures how much of an interval set lies
before given times, which turns "idle time inside [s, e]" into two array lookups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rooflens.analyzers.trace.columns import MISSING
from rooflens.analyzers.trace.intervals import Intervals, merge, subtract
from rooflens.analyzers.trace.model import TraceModel


@dataclass(frozen=True, slots=True)
class GpuWork:
    """The timeline's GPU events sorted by start, with their launches, busy and idle sets."""

    uid: np.ndarray  # event uid, sorted by start
    start: np.ndarray
    end: np.ndarray
    launch: np.ndarray  # uid of the runtime call that launched it, or -1
    launch_ts: np.ndarray  # that call's start, NaN when unlinked
    busy: Intervals
    idle: Intervals

    @property
    def window(self) -> tuple[float, float]:
        """First start to last end of the busy set ((0, 0) without GPU work)."""
        if len(self.busy) == 0:
            return 0.0, 0.0
        return float(self.busy.start[0]), float(self.busy.end[-1])

    @property
    def window_us(self) -> float:
        return self.busy.span()


def gpu_work(model: TraceModel, *, include_unlinked: bool = False) -> GpuWork:
    """The GPU events `model.gpu_timeline(include_unlinked=...)` counts, as columns."""
    gpu = model.gpu
    use = gpu if include_unlinked else gpu[gpu["linked"].to_numpy()]
    start = use["ts"].to_numpy(dtype=np.float64)
    end = start + np.nan_to_num(use["dur"].to_numpy(dtype=np.float64))
    order = np.argsort(start, kind="stable")
    uid = use.index.to_numpy()[order]
    launch = use["launch"].to_numpy()[order]
    ts = model.events["ts"].to_numpy(dtype=np.float64)
    launch_ts = np.where(launch != MISSING, ts[np.maximum(launch, 0)], np.nan)
    busy = merge(start, end)
    window = Intervals(busy.start[:1], busy.end[-1:]) if len(busy) else Intervals.empty()
    return GpuWork(
        uid=uid,
        start=start[order],
        end=end[order],
        launch=launch,
        launch_ts=launch_ts,
        busy=busy,
        idle=subtract(window, busy),
    )


def length_before(intervals: Intervals, t: np.ndarray) -> np.ndarray:
    """For each time in `t`, the length of `intervals` lying before it."""
    t = np.asarray(t, dtype=np.float64)
    if len(intervals) == 0:
        return np.zeros(t.shape)
    lengths = intervals.end - intervals.start
    before = np.concatenate([[0.0], np.cumsum(lengths)])
    k = np.searchsorted(intervals.start, t, side="right") - 1  # last interval starting <= t
    inside = np.clip(t - intervals.start[np.maximum(k, 0)], 0.0, lengths[np.maximum(k, 0)])
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0.0)


def length_within(intervals: Intervals, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Length of `intervals` inside each [start, end] (0 where end <= start)."""
    end = np.maximum(np.asarray(end, dtype=np.float64), start)
    return length_before(intervals, end) - length_before(intervals, start)


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """The parts of `a` also covered by `b` (both merged sets)."""
    return subtract(a, subtract(a, b))


def between(start: np.ndarray, end: np.ndarray) -> Intervals:
    """Merged set of the non-empty [start, end] pairs."""
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    keep = end > start
    return merge(start[keep], end[keep])
