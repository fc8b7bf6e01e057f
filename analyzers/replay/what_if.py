"""`what_if(model, specs)`: the identity replay, the critical path of the median iteration,
and the step predicted after each change and after all of them together.

A change is written `KIND:PATTERN=FACTOR`:

- `gpu:PATTERN=F`  GPU events whose kernel name contains PATTERN take F of their time
  (0.5: twice as fast);
- `op:NAME=F`      the GPU events launched by operator NAME (exactly) take F of their time;
- `host:PATTERN=F` host spans (operators, annotations, Python frames) whose name contains
  PATTERN keep F of their time (0: their code removed, as when a loader stall goes away);
- `async:PATTERN=F` the calls inside host spans whose name contains PATTERN wait no more and
  what they launched takes F of its time (a copy made async and pinned);
- `graph:PATTERN=F` the host work inside host spans whose name contains PATTERN (the calls
  and the time between them) keeps F of its time, their launches, kernels and waits kept:
  launch overhead removed over a region, as a CUDA graph replays it (0: all of it);
- `overlap:PATTERN=F` the events of other streams that wait for GPU events whose kernel name
  contains PATTERN (collectives: `nccl`, `AllReduce`) wait only for F of their time (0: the
  collective fully overlapped with the work after it); their own stream and host calls that
  waited for them still wait for their end;
- `warmup`          the warm-up iterations dropped: the window's mean step, warm-up included,
  against the steady time per step (every other prediction is already on the steady steps,
  so this change is never part of the combined prediction).

Patterns are matched as plain text, never as expressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict

from ..trace.columns import MISSING
from ..trace.iterations import Iterations, find_iterations
from ..trace.model import TraceModel
from ..trace.phases import find_phases
from .changes import (
    calls_made_async,
    combined,
    gpu_events_scaled,
    host_spans_removed,
    host_spans_shortened,
    outermost,
    waits_released,
)
from .critical_path import median_step_path
from .graph import ReplayGraph, build_graph
from .simulate import IDENTITY, Changes, replay
from .step_region import StepRegion, StepTimes, step_region
from .step_times import replay_steps, step_thread

SPEC = re.compile(r"^(gpu|op|host|async|graph|overlap):(.+)=([0-9]*\.?[0-9]+)$")
WARMUP = "warmup"
HOST_SPANS = ("cpu_op", "user_annotation", "python_function")
TOP_PATH = 10


class ChangeError(ValueError):
    """A change spec that cannot be read or matches nothing (the message says which)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class IterationFigure(Frozen):
    index: int
    label: str
    measured_ms: float
    replayed_ms: float


class PathItem(Frozen):
    kind: str
    name: str
    ms: float
    share: float


class Prediction(Frozen):
    spec: str
    events: int  # GPU events or host spans the change touched
    predicted_step_ms: float
    saving_ms: float
    critical_next: list[PathItem]


class AssumptionFigure(Frozen):
    rule: str
    events: int
    ms: float


class WhatIf(Frozen):
    """`measured_step_ms`/`replayed_step_ms`: the median iteration's host span, as recorded
    and with nothing changed (their difference is the identity replay error); predictions
    are in time per steady step (`time_per_step_ms`, replay/step_region.py: the steps' host
    spans and the GPU work they launched), over `steady_steps` iterations (0: the window)."""

    measured_step_ms: float
    replayed_step_ms: float
    replay_error_pct: float
    time_per_step_ms: float
    steady_steps: int
    iterations: list[IterationFigure]
    critical_path: list[PathItem]
    changes: list[Prediction]
    combined: Prediction | None
    assumptions: list[AssumptionFigure]


@dataclass(frozen=True)
class _Change:
    spec: str
    changes: Changes | None  # None: the warm-up dropped (not a change to the replay)
    events: int


def what_if(model: TraceModel, specs: list[str]) -> WhatIf:
    """Raises CannotReplay when the trace lacks what the graph needs, ChangeError for a spec
    that cannot be read or matches nothing."""
    graph = build_graph(model)
    iterations = find_iterations(model)
    region = steady_region(model, graph, iterations)
    parsed = [parse_change(model, graph, spec, region) for spec in specs]
    base = replay_steps(graph, iterations)
    identity = region.times(graph, replay(graph))
    predictions = [
        _predict(model, graph, iterations, region, identity, c)
        if c.changes is not None
        else _warmup_dropped(model, graph, iterations, identity, c)
        for c in parsed
    ]
    together = None
    replayed = [c for c in parsed if c.changes is not None]
    if len(replayed) > 1:
        both = _Change(
            " + ".join(c.spec for c in replayed),
            combined(graph, [c.changes for c in replayed if c.changes is not None]),
            sum(c.events for c in replayed),
        )
        together = _predict(model, graph, iterations, region, identity, both)
    return WhatIf(
        measured_step_ms=base.measured_step_ms,
        replayed_step_ms=base.replayed_step_ms,
        replay_error_pct=base.replay_error_pct,
        time_per_step_ms=identity.per_step_us / 1e3,
        steady_steps=region.steps if region.steady is not None else 0,
        iterations=[
            IterationFigure(
                index=i.index, label=i.label, measured_ms=i.measured_ms, replayed_ms=i.replayed_ms
            )
            for i in base.iterations
        ],
        critical_path=_path(model, graph, iterations, IDENTITY),
        changes=predictions,
        combined=together,
        assumptions=[
            AssumptionFigure(rule=a.rule, events=a.events, ms=a.us / 1e3) for a in base.assumptions
        ],
    )


def parse_change(
    model: TraceModel, graph: ReplayGraph, spec: str, region: StepRegion | None = None
) -> _Change:
    """`region`: the steady steps, which say whether there is a warm-up to drop."""
    if spec.strip() == WARMUP:
        return _warmup_change(model, graph, spec.strip(), region)
    found = SPEC.match(spec.strip())
    if found is None:
        raise ChangeError(
            f"cannot read the change {spec!r}: write KIND:PATTERN=FACTOR with KIND gpu, op, "
            "host, async, graph or overlap (gpu:gemm=0.5, op:aten::mm=0.5, host:DataLoader=0, "
            "async:aten::to=0.5, graph:DecoderLayer=0, overlap:nccl=0), or warmup"
        )
    kind, pattern, factor = found.group(1), found.group(2), float(found.group(3))
    if kind in ("gpu", "op", "async") and not factor > 0:
        raise ChangeError(f"{spec!r}: GPU events need a factor above 0")
    if kind in ("host", "graph") and factor > 1:
        raise ChangeError(f"{spec!r}: host time can only be kept in part (a factor 0 to 1)")
    if kind == "overlap" and factor > 1:
        raise ChangeError(f"{spec!r}: a collective can be waited for in part only (0 to 1)")
    if kind == "host":
        return _host_change(model, graph, spec, pattern, factor)
    if kind in ("async", "graph"):
        spans = list(outermost(*_matching_spans(model, pattern)))
        if not spans:
            raise ChangeError(f"{spec!r} matches no host span of the trace")
        made = calls_made_async if kind == "async" else host_spans_shortened
        return _Change(spec, made(model, graph, spans, factor, spec), len(spans))
    names = model.names
    if kind in ("gpu", "overlap"):
        hit = np.array([pattern in str(n) for n in names[graph.gpu.uid]], dtype=bool)
    else:
        launcher = model.launcher[graph.gpu.uid]
        hit = (launcher != MISSING) & (names[np.maximum(launcher, 0)] == pattern)
    if not hit.any():
        raise ChangeError(f"{spec!r} matches no GPU event of the trace")
    if kind == "overlap":
        waited = np.isin(np.flatnonzero(hit), graph.gpu.after)
        if not waited.any():
            raise ChangeError(
                f"{spec!r}: no event of another stream waits for the GPU events it matches "
                "(they are overlapped already)"
            )
        changes = waits_released(graph, graph.gpu.uid[hit], factor, spec)
        return _Change(spec, changes, int(waited.sum()))
    changes = gpu_events_scaled(graph, graph.gpu.uid[hit], factor, spec)
    return _Change(spec, changes, int(hit.sum()))


def _warmup_change(
    model: TraceModel, graph: ReplayGraph, spec: str, region: StepRegion | None
) -> _Change:
    steady = region if region is not None else steady_region(model, graph, find_iterations(model))
    marked = step_region(model, graph, find_iterations(model))
    dropped = marked.steps - steady.steps if steady.steady is not None else 0
    if dropped <= 0:
        raise ChangeError(
            f"{spec!r}: the window holds no warm-up iteration (every marked iteration is "
            "steady, or none is marked)"
        )
    return _Change(spec, None, dropped)


def _host_change(
    model: TraceModel, graph: ReplayGraph, spec: str, pattern: str, factor: float
) -> _Change:
    """Factor 0 removes the spans' code (the calls inside and what they launched); a factor
    between keeps that share of the time between their calls."""
    spans, ts, dur, thread = _matching_spans(model, pattern)
    if len(spans) == 0:
        raise ChangeError(f"{spec!r} matches no host span of the trace")
    outer = list(outermost(spans, ts, dur, thread))
    if factor == 0:
        return _Change(spec, host_spans_removed(model, graph, outer, spec), len(outer))
    removed = tuple(
        (int(model.thread_code[u]), float(ts[u]), float(ts[u] + (1 - factor) * dur[u]))
        for u in outer
    )
    return _Change(spec, Changes(host_removed=removed, label=spec), len(removed))


def _matching_spans(model: TraceModel, pattern: str):
    """Host spans whose name contains `pattern`, with the columns `outermost` needs."""
    ev = model.recorded
    spans = np.flatnonzero(
        ev["cat"].isin(HOST_SPANS).to_numpy()
        & np.array([pattern in str(n) for n in model.names[: len(ev)]], dtype=bool)
    )
    ts, dur = ev["ts"].to_numpy(float), ev["dur"].to_numpy(float)
    return spans, ts, dur, model.thread_code


def _predict(
    model: TraceModel,
    graph: ReplayGraph,
    iterations: Iterations,
    region: StepRegion,
    identity: StepTimes,
    c: _Change,
) -> Prediction:
    after = region.times(graph, replay(graph, c.changes), c.changes.host_removed)
    saving = region.saving_us(identity, after)[0] / 1e3
    return Prediction(
        spec=c.spec,
        events=c.events,
        predicted_step_ms=identity.per_step_us / 1e3 - saving,
        saving_ms=saving,
        critical_next=_path(model, graph, iterations, c.changes)[:3],
    )


def _warmup_dropped(
    model: TraceModel,
    graph: ReplayGraph,
    iterations: Iterations,
    steady: StepTimes,
    c: _Change,
) -> Prediction:
    """The window's mean step over every marked iteration (the first one's own span, then
    the pace of the rest), against the steady time per step."""
    marked = step_region(model, graph, iterations)
    every, steps = marked.times(graph, replay(graph)), marked.steps
    mean = every.first_us
    if every.pace_us is not None:
        mean = (every.first_us + every.pace_us * (steps - 1)) / steps
    return Prediction(
        spec=c.spec,
        events=c.events,
        predicted_step_ms=steady.per_step_us / 1e3,
        saving_ms=(mean - steady.per_step_us) / 1e3,
        critical_next=_path(model, graph, iterations, IDENTITY)[:3],
    )


def steady_region(model: TraceModel, graph: ReplayGraph, iterations: Iterations) -> StepRegion:
    """The steady iterations (a leading warm-up left out, trace/phases.py) as one region."""
    host, gpu = graph.host, graph.gpu
    window = (float(gpu.start.min()), float((gpu.start + gpu.dur).max()))
    if len(host.start) == 0 or not len(gpu.start):
        return step_region(model, graph, iterations)
    phases = find_phases(iterations, window).summary
    return step_region(model, graph, iterations, phases.steady if phases is not None else None)


def _path(
    model: TraceModel, graph: ReplayGraph, iterations: Iterations, changes: Changes
) -> list[PathItem]:
    """The critical path's largest items over the median iteration (the window when no
    iteration is marked)."""
    replayed = replay(graph, changes)
    path = median_step_path(model, graph, replayed, iterations, step_thread(graph))
    return [
        PathItem(kind=k, name=n, ms=us / 1e3, share=share) for k, n, us, share in path.top(TOP_PATH)
    ]
