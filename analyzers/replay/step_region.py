"""The steps a prediction is judged on, and their time per step in any replay
(docs/what-if.md#priorities-from-the-replay).

The steps are the steady-state iterations (all marked ones when no warm-up is known; the
whole window when none is marked). Their time runs from the first step's start to when the
last step's host span has ended and every step's GPU work is done, per step: a GPU that falls
behind a host that never waits counts, and a GPU that waits on the host does not (the host
spans set the pace), so a change is judged by what it buys in steady state. The identity
replay error (step_times.py) stays measured on the host spans, as the trace recorded them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from ..trace.iterations import Iterations
from .graph import ReplayGraph
from .simulate import Removed, Replayed, map_times
from .step_times import step_thread


@dataclass(frozen=True)
class StepRegion:
    """`steady`: the iterations' indices (None: the whole window, one step); `bounds`: their
    host spans in trace µs; `host_step`/`gpu_step`: per graph call and GPU event, the step it
    belongs to (a call by its start, any thread; a GPU event by its launch), or -1."""

    steady: frozenset[int] | None
    bounds: tuple[tuple[float, float], ...]
    thread: int
    host_step: np.ndarray
    gpu_step: np.ndarray

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
        on_host, on_gpu = self.host_step >= 0, self.gpu_step >= 0
        starts = np.concatenate([r.host_start[on_host], r.gpu_start[on_gpu]])
        ends = np.concatenate([r.host_end[on_host], r.gpu_end[on_gpu]])
        if self.steady is not None:
            edges = np.asarray([self.begin, self.end])
            first, last = map_times(graph, r, self.thread, edges, removed).tolist()
            starts, ends = np.append(starts, first), np.append(ends, last)
        if len(starts) == 0:
            return 0.0
        return float(ends.max() - starts.min()) / self.steps


def step_region(
    graph: ReplayGraph, iterations: Iterations, steady: Collection[int] | None = None
) -> StepRegion:
    """The region of the marked iterations at positions `steady` of `iterations` (None: all
    of them); the whole window as one step when none is marked."""
    its = iterations.iterations
    marked = [it for it in its if not it.open_end and it.host_ms > 0]
    thread = step_thread(graph)
    if not marked:
        host, gpu = graph.host, graph.gpu
        end = max(
            float((host.start + host.dur).max(initial=-np.inf)), float((gpu.start + gpu.dur).max())
        )
        begin = float(min(host.start.min(initial=np.inf), gpu.start.min()))
        return _region(graph, None, ((begin, end + 1.0),), thread)
    chosen = marked
    if steady and max(steady) < len(its):
        wanted = {its[k].index for k in steady}
        chosen = [it for it in marked if it.index in wanted] or marked
    origin = iterations.origin_us
    bounds = tuple(
        (origin + it.host_start_ms * 1e3, origin + it.host_end_ms * 1e3)
        for it in sorted(chosen, key=lambda it: it.host_start_ms)
    )
    return _region(graph, frozenset(it.index for it in chosen), bounds, thread)


def _region(
    graph: ReplayGraph, steady: frozenset[int] | None, bounds: tuple, thread: int
) -> StepRegion:
    edges = np.asarray(bounds, dtype=float).reshape(-1, 2)
    host_step = _step_of(graph.host.start, edges)
    launch = graph.gpu.launch
    gpu_step = np.where(
        launch >= 0, host_step[np.maximum(launch, 0)], _step_of(graph.gpu.start, edges)
    )
    return StepRegion(steady, bounds, thread, host_step, gpu_step)


def _step_of(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per time, the index of the [start, end) span holding it (sorted, disjoint), or -1."""
    k = np.searchsorted(edges[:, 0], times, side="right") - 1
    inside = (k >= 0) & (times < edges[np.maximum(k, 0), 1])
    return np.where(inside, k, -1)
