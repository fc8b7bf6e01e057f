"""The GPU work the timeline counts, its window and the idle intervals inside it.

`gpu_work` selects exactly the GPU events `gpu_timeline` pools (linked ones unless told
otherwise), so the idle set here has the length of the timeline's `idle_time` (see
docs/analysis.md#host-side). Events, busy runs and idle gaps come from one sorted, filtered
event set in one pass, so they agree by construction: busy[k] is the run of events
first[k] .. first[k + 1] - 1, and idle[k] is the gap between busy[k] and busy[k + 1].
A zero-length event (sub-microsecond work in traces with whole-microsecond times) is a busy
instant: alone between two gaps it splits them, so consecutive gaps can touch there.
`length_before` measures how much of an interval set lies before given times, which turns
"idle time inside [s, e]" into two array lookups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .columns import MISSING
from .intervals import Intervals, merge, subtract
from .model import TraceModel


@dataclass(frozen=True, slots=True)
class GpuWork:
    """The timeline's GPU events sorted by start, with their launches, busy runs and gaps.

    Invariants (built in `gpu_work`): len(first) == len(busy) == len(idle) + 1 when there
    is any event; busy.start[k] == start[first[k]]; idle[k] == (busy.end[k], busy.start[k+1]).
    """

    uid: np.ndarray  # event uid, sorted by start
    start: np.ndarray
    end: np.ndarray
    launch: np.ndarray  # uid of the runtime call that launched it, or -1
    launch_ts: np.ndarray  # that call's start, NaN when unlinked
    first: np.ndarray  # per busy run, the index (into the arrays above) of its first event
    busy: Intervals
    idle: Intervals  # idle[k] lies between busy[k] and busy[k + 1]

    @property
    def window(self) -> tuple[float, float]:
        """First start to last end of the busy set ((0, 0) without GPU work)."""
        if len(self.busy) == 0:
            return 0.0, 0.0
        return float(self.busy.start[0]), float(self.busy.end[-1])

    @property
    def window_us(self) -> float:
        return self.busy.span()

    def run_events(self, runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For busy run indices `runs`, the index of their first event and one past their last."""
        after = np.append(self.first[1:], len(self.start))
        return self.first[runs], after[runs]


def gpu_work(model: TraceModel, *, include_unlinked: bool = False) -> GpuWork:
    """The GPU events `model.gpu_timeline(include_unlinked=...)` counts, as columns."""
    gpu = model.gpu
    use = gpu if include_unlinked else gpu[gpu["linked"].to_numpy()]
    start = use["ts"].to_numpy(dtype=np.float64)
    end = start + np.nan_to_num(use["dur"].to_numpy(dtype=np.float64))
    # The loader already hides events without finite times (skip.py); rows added later
    # (grafted, pseudo) pass the same test here, once, for every array below.
    usable = np.flatnonzero(np.isfinite(start) & np.isfinite(end) & (end >= start))
    order = usable[np.argsort(start[usable], kind="stable")]
    start, end = start[order], end[order]
    launch = use["launch"].to_numpy()[order]
    ts = model.events["ts"].to_numpy(dtype=np.float64)
    launch_ts = np.where(launch != MISSING, ts[np.maximum(launch, 0)], np.nan)
    first, busy = busy_runs(start, end)
    return GpuWork(
        uid=use.index.to_numpy()[order],
        start=start,
        end=end,
        launch=launch,
        launch_ts=launch_ts,
        first=first,
        busy=busy,
        idle=Intervals(busy.end[:-1], busy.start[1:]),
    )


def busy_runs(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, Intervals]:
    """Runs of events sorted by start that overlap or touch: each run's first index, its span.

    The same runs as `merge` (a start beyond everything before it opens a run), so the gap
    before every run but the first is strictly positive.
    """
    if len(start) == 0:
        return np.zeros(0, dtype=np.int64), Intervals.empty()
    reach = np.maximum.accumulate(end)
    opens = np.empty(len(start), dtype=bool)
    opens[0] = True
    opens[1:] = start[1:] > reach[:-1]
    first = np.flatnonzero(opens)
    last = np.append(first[1:] - 1, len(start) - 1)
    return first, Intervals(start[first], reach[last])


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
