"""The steps a prediction is judged on, and their time per step in any replay
(docs/what-if.md#priorities-from-the-replay).

The steps are the steady-state iterations (all marked ones when no warm-up is known; the
whole window, as one step, when none is marked). A step is done when its host work has ended
(the last host event inside it, on the thread that marks the steps: operators, annotations,
frames, calls; an event spanning the whole step or reaching past it, such as the step's own
marker or the training loop's frame, is no work of the step) and the GPU work its calls launched has
run. With several steps, the time per step is the pace at which they are done: the first
step's done time to the last one's, per step between, free of the window's edges (a backlog of
GPU work at the start, an empty tail in the last marker); a change saves that pace's saving
per step, and over the steps that on every step after the first and on the first its own
saving, never more than the pace's.
With one step it is the step's own span, first work to done. So a GPU that falls behind a
host that never waits counts, and a GPU that waits on the host does not. The identity replay
error (step_times.py) stays measured on the host spans as the trace recorded them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from ..trace.iterations import Iterations
from ..trace.model import TraceModel
from ..trace.schema import LAUNCH_CATEGORIES
from .graph import ReplayGraph
from .simulate import Removed, Replayed, map_times
from .step_times import step_thread

HOST_WORK = ("cpu_op", "user_annotation", "python_function", *sorted(LAUNCH_CATEGORIES))
WRAPPER_SLACK_US = 1.0  # an event within this of both ends of a step spans the whole step


@dataclass(frozen=True)
class StepTimes:
    """`pace_us`: the steps are done this far apart (None with one step); `first_us`: the
    first step's own span, first work to done."""

    pace_us: float | None
    first_us: float

    @property
    def per_step_us(self) -> float:
        return self.first_us if self.pace_us is None else self.pace_us


@dataclass(frozen=True)
class StepRegion:
    """`steady`: the iterations' indices (None: the whole window, one step); `bounds`: their
    host spans in trace µs; `host_step`/`gpu_step`: per graph call and GPU event, the step it
    belongs to (a call by its start, any thread; a GPU event by its launch), or -1;
    `work_start`/`work_end`: per step, its first and last host work on the step thread
    (trace µs, NaN when it has none)."""

    steady: frozenset[int] | None
    bounds: tuple[tuple[float, float], ...]
    thread: int
    host_step: np.ndarray
    gpu_step: np.ndarray
    work_start: np.ndarray
    work_end: np.ndarray

    @property
    def begin(self) -> float:
        return self.bounds[0][0]

    @property
    def end(self) -> float:
        return self.bounds[-1][1]

    @property
    def steps(self) -> int:
        return max(1, len(self.bounds))

    def holds(self, index: int) -> bool:
        return self.steady is None or index in self.steady

    def per_step_us(self, graph: ReplayGraph, r: Replayed, removed: Removed = ()) -> float:
        """Time per step in replay `r` (`removed`: the host time its change took out)."""
        return self.times(graph, r, removed).per_step_us

    def saving_us(self, before: StepTimes, after: StepTimes) -> tuple[float, float]:
        """(saving per step, saving over the steps) in µs from one replay to another. Per
        step: the pace's saving, what every step of a long run gains. Over the steps: that
        for every step after the first, and the first step's own saving no larger than it
        (a first step freed of a backlog says nothing of the steady state; a first step
        without the work that later steps repeat saves less)."""
        if self.steps < 2 or before.pace_us is None or after.pace_us is None:
            saved = before.first_us - after.first_us
            return saved, saved
        pace = before.pace_us - after.pace_us
        first = min(before.first_us - after.first_us, max(pace, 0.0))
        return pace, pace * (self.steps - 1) + first

    def times(self, graph: ReplayGraph, r: Replayed, removed: Removed = ()) -> StepTimes:
        """The steps' pace and the first step's span in replay `r`."""
        done = self._edge(graph, r, removed, self.work_end, np.maximum, r.host_end, r.gpu_end)
        began = self._edge(
            graph, r, removed, self.work_start, np.minimum, r.host_start, r.gpu_start
        )
        first = float(done[0] - began[0]) if np.isfinite(done[0] - began[0]) else 0.0
        finished = np.flatnonzero(np.isfinite(done))
        pace = None
        if self.steps >= 2 and len(finished) >= 2:
            a, b = finished[0], finished[-1]
            pace = float(done[b] - done[a]) / float(b - a)
        return StepTimes(pace, first)

    def _edge(self, graph, r, removed, work, pick, host_times, gpu_times) -> np.ndarray:
        """Per step, the earliest start (`pick` = minimum) or latest end (maximum) of its
        host work, its calls and its GPU work, in the replay."""
        fill = np.inf if pick is np.minimum else -np.inf
        out = np.full(self.steps, fill)
        for step, times in ((self.host_step, host_times), (self.gpu_step, gpu_times)):
            on = step >= 0
            pick.at(out, step[on], times[on])
        has = np.isfinite(work)
        if has.any():
            mapped = map_times(graph, r, self.thread, work[has], removed)
            out[has] = pick(out[has], mapped)
        return out


def step_region(
    model: TraceModel,
    graph: ReplayGraph,
    iterations: Iterations,
    steady: Collection[int] | None = None,
) -> StepRegion:
    """The region of the marked iterations at positions `steady` of `iterations` (None: all
    of them); the whole window as one step when none is marked."""
    its = iterations.iterations
    marked = [it for it in its if not it.open_end and it.host_ms > 0]
    thread = step_thread(graph)
    if not marked:
        host, gpu = graph.host, graph.gpu
        ends = (
            float((host.start + host.dur).max(initial=-np.inf)),
            float((gpu.start + gpu.dur).max()),
        )
        begin = float(min(host.start.min(initial=np.inf), gpu.start.min()))
        return _region(model, graph, None, ((begin, max(ends) + 1.0),), thread)
    chosen = marked
    if steady and max(steady) < len(its):
        wanted = {its[k].index for k in steady}
        chosen = [it for it in marked if it.index in wanted] or marked
    origin = iterations.origin_us
    bounds = tuple(
        (origin + it.host_start_ms * 1e3, origin + it.host_end_ms * 1e3)
        for it in sorted(chosen, key=lambda it: it.host_start_ms)
    )
    return _region(model, graph, frozenset(it.index for it in chosen), bounds, thread)


def _region(
    model: TraceModel,
    graph: ReplayGraph,
    steady: frozenset[int] | None,
    bounds: tuple,
    thread: int,
) -> StepRegion:
    edges = np.asarray(bounds, dtype=float).reshape(-1, 2)
    host_step = _step_of(graph.host.start, edges)
    launch = graph.gpu.launch
    gpu_step = np.where(
        launch >= 0, host_step[np.maximum(launch, 0)], _step_of(graph.gpu.start, edges)
    )
    work_start, work_end = _host_work(model, thread, edges)
    return StepRegion(steady, bounds, thread, host_step, gpu_step, work_start, work_end)


def _host_work(model: TraceModel, thread: int, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per step, the first start and last end of the host work on `thread` inside it, events
    spanning the whole step or reaching past it (its marker, the loop's frames) left out
    (NaN where a step has none)."""
    ev = model.recorded
    n = len(ev)
    ts = ev["ts"].to_numpy(float)
    end = ts + np.nan_to_num(ev["dur"].to_numpy(float), nan=0.0)
    on = np.flatnonzero(
        ev["cat"].isin(HOST_WORK).to_numpy()
        & (ev["ph"] == "X").to_numpy()
        & (model.thread_code[:n] == thread)
    )
    step = _step_of(ts[on], edges)
    inside = step >= 0
    on, step = on[inside], step[inside]
    whole = (ts[on] <= edges[step, 0] + WRAPPER_SLACK_US) & (
        end[on] >= edges[step, 1] - WRAPPER_SLACK_US
    )
    beyond = end[on] > edges[step, 1] + WRAPPER_SLACK_US  # a frame around several steps
    keep = ~whole & ~beyond
    on, step = on[keep], step[keep]
    first = np.full(len(edges), np.inf)
    last = np.full(len(edges), -np.inf)
    np.minimum.at(first, step, ts[on])
    np.maximum.at(last, step, end[on])
    first[~np.isfinite(first)] = np.nan
    last[~np.isfinite(last)] = np.nan
    return first, last


def _step_of(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per time, the index of the [start, end) span holding it (sorted, disjoint), or -1."""
    k = np.searchsorted(edges[:, 0], times, side="right") - 1
    inside = (k >= 0) & (times < edges[np.maximum(k, 0), 1])
    return np.where(inside, k, -1)
