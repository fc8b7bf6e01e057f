"""Step times, measured and replayed: each iteration's host span mapped through the replay on
the thread that launches the GPU work, and the identity replay error (docs/what-if.md).

Identity replay error = |replayed - measured| / measured per iteration with a marked end:
the graph with nothing changed should give back the step the trace measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace.iterations import Iterations
from .graph import Assumption, ReplayGraph
from .simulate import IDENTITY, Changes, Removed, Replayed, map_times, replay


@dataclass(frozen=True)
class IterationTime:
    index: int
    label: str
    measured_ms: float
    replayed_ms: float

    @property
    def error_pct(self) -> float:
        if self.measured_ms <= 0:
            return 0.0
        return 100.0 * abs(self.replayed_ms - self.measured_ms) / self.measured_ms


@dataclass(frozen=True)
class StepReplay:
    """One replay's step figures: per iteration, and the whole window."""

    iterations: tuple[IterationTime, ...]
    window_measured_ms: float
    window_replayed_ms: float
    assumptions: tuple[Assumption, ...]

    @property
    def measured_step_ms(self) -> float:
        return _median([i.measured_ms for i in self.iterations], self.window_measured_ms)

    @property
    def replayed_step_ms(self) -> float:
        return _median([i.replayed_ms for i in self.iterations], self.window_replayed_ms)

    @property
    def replay_error_pct(self) -> float:
        """Mean identity error over the iterations (over the window when none is marked)."""
        if self.iterations:
            return float(np.mean([i.error_pct for i in self.iterations]))
        w = self.window_measured_ms
        return 0.0 if w <= 0 else 100.0 * abs(self.window_replayed_ms - w) / w


def step_thread(graph: ReplayGraph) -> int:
    """The thread code that launched the most GPU events (where the steps are marked)."""
    launch = graph.gpu.launch[graph.gpu.launch >= 0]
    return int(np.bincount(graph.host.thread[launch]).argmax())


def replay_steps(
    graph: ReplayGraph, iterations: Iterations, changes: Changes = IDENTITY
) -> StepReplay:
    return steps_of(graph, replay(graph, changes), iterations, changes.host_removed)


def steps_of(
    graph: ReplayGraph, replayed: Replayed, iterations: Iterations, removed: Removed = ()
) -> StepReplay:
    """The step figures of one replay (`removed`: the host time its change took out)."""
    return StepReplay(
        tuple(_iterations(graph, replayed, iterations, removed)),
        window_measured_ms=_window(graph) / 1e3,
        window_replayed_ms=(replayed.end - _begin(graph, replayed)) / 1e3,
        assumptions=graph.assumptions,
    )


def _iterations(graph: ReplayGraph, replayed: Replayed, iterations: Iterations, removed: Removed):
    marked = [it for it in iterations.iterations if not it.open_end and it.host_ms > 0]
    if not marked:
        return
    origin = iterations.origin_us
    ends = np.asarray([(it.host_start_ms, it.host_end_ms) for it in marked]) * 1e3 + origin
    thread = step_thread(graph)
    mapped = map_times(graph, replayed, thread, ends.ravel(), removed).reshape(ends.shape)
    for it, (start, end) in zip(marked, mapped.tolist(), strict=True):
        yield IterationTime(it.index, it.label, it.host_ms, (end - start) / 1e3)


def _window(graph: ReplayGraph) -> float:
    host, gpu = graph.host, graph.gpu
    end = max((host.start + host.dur).max(initial=-np.inf), (gpu.start + gpu.dur).max())
    return float(end - min(host.start.min(initial=np.inf), gpu.start.min()))


def _begin(graph: ReplayGraph, replayed: Replayed) -> float:
    return float(min(replayed.host_start.min(initial=np.inf), replayed.gpu_start.min()))


def _median(values: list[float], otherwise: float) -> float:
    return float(np.median(values)) if values else otherwise
