"""Iterations of the profiled loop: from `ProfilerStep#N`, else from repeating operators.

Each iteration has a host span and the GPU span of the work launched inside it (a GPU event
belongs to the iteration whose host span holds its launch call). Times are milliseconds from
the start of the analysed window (the GPU timeline's first event). Definitions and the
confidence of the repeating-operator method: docs/analysis.md#iterations.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from .columns import MISSING, name_matches
from .idle_window import GpuWork, gpu_work, length_within
from .intervals import grouped_union_length
from .model import TraceModel
from .periodicity import find_period
from .tree import nearest_ancestor

IterationMethod = Literal[
    "profiler_step", "optimizer_step", "benchmark_marks", "repeating_ops", "none"
]
STEP_NAME = re.compile(r"ProfilerStep#(\d+)")
OPTIMIZER_STEP = re.compile(r"Optimizer\.step#.*")
# a benchmark's own marks around each repetition: `warmup`, `measure`, `iteration 3`, `step_2`
BENCHMARK_MARK = re.compile(
    r"(?i)(warm[ _-]?up|measure(ment)?|bench(mark)?|iter(ation)?|step|trial|rep(eat)?|run)"
    r"([ _#:.-]*\d+)?"
)
WARMUP_MARK = re.compile(r"(?i)warm[ _-]?up.*")
STEP_CATEGORIES = ("user_annotation", "cpu_op")
HIGH_CONFIDENCE = 0.95  # share of operators repeating at the period (docs/analysis.md)
HIGH_COVERAGE = 0.9  # share of the main thread's top-level operators inside the iterations


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class Iteration(Frozen):
    """One iteration; `open_end` when nothing marks its end (the last repeating one)."""

    index: int
    label: str
    host_start_ms: float
    host_end_ms: float
    host_ms: float
    open_end: bool
    gpu_start_ms: float | None
    gpu_end_ms: float | None
    gpu_span_ms: float
    gpu_busy_ms: float
    gpu_events: int


class Spread(Frozen):
    count: int
    mean_ms: float
    median_ms: float
    std_ms: float
    cv: float  # std / mean (0 when the mean is 0)
    min_ms: float
    max_ms: float

    @classmethod
    def of(cls, values_ms: np.ndarray) -> Spread:
        v = np.asarray(values_ms, dtype=np.float64)
        if v.size == 0:
            return cls(count=0, mean_ms=0, median_ms=0, std_ms=0, cv=0, min_ms=0, max_ms=0)
        mean = float(v.mean())
        std = float(v.std())
        return cls(
            count=int(v.size),
            mean_ms=mean,
            median_ms=float(np.median(v)),
            std_ms=std,
            cv=std / mean if mean > 0 else 0.0,
            min_ms=float(v.min()),
            max_ms=float(v.max()),
        )


class IterationGap(Frozen):
    """Between iteration `after` and the next: host gap, GPU gap, GPU idle inside it."""

    after: int
    host_gap_ms: float
    gpu_gap_ms: float | None
    gpu_idle_ms: float


class Iterations(Frozen):
    method: IterationMethod
    confidence: float  # 1 for marked steps; the period score for repeating operators
    confident: bool
    detail: str
    origin_us: float  # trace time of 0 ms (the analysed window's start)
    period_ops: int | None = None
    coverage: float | None = None  # share of the main thread's top-level ops in iterations
    iterations: list[Iteration]
    time_per_iteration: Spread  # host time of the iterations with a marked end
    gpu_span: Spread
    gpu_busy: Spread
    gaps: list[IterationGap]

    @property
    def count(self) -> int:
        return len(self.iterations)

    def host_spans_us(self) -> tuple[np.ndarray, np.ndarray]:
        """Each iteration's host start and end on the trace clock (µs)."""
        start = np.array([self.origin_us + it.host_start_ms * 1e3 for it in self.iterations])
        end = np.array([self.origin_us + it.host_end_ms * 1e3 for it in self.iterations])
        return start, end


def find_iterations(
    model: TraceModel,
    *,
    include_unlinked: bool = False,
    method: Literal["auto", "profiler_step", "repeating_ops"] = "auto",
) -> Iterations:
    """Iterations from ProfilerStep spans when the trace has them (`auto`), else repeats."""
    work = gpu_work(model, include_unlinked=include_unlinked)
    spans = _profiler_steps(model) if method != "repeating_ops" else None
    if spans is not None:
        starts, ends, labels = spans
        detail = f"{len(starts)} ProfilerStep# spans"
        return _assemble(work, "profiler_step", 1.0, detail, starts, ends, labels, None)
    if method == "profiler_step":
        return _assemble(work, "none", 0.0, "no ProfilerStep# spans", *_nothing(), None)
    steps = _optimizer_steps(model) if method == "auto" else None
    if steps is not None:
        starts, ends, labels = steps
        detail = f"{len(starts)} iterations ended by Optimizer.step# annotations"
        return _assemble(work, "optimizer_step", 1.0, detail, starts, ends, labels, None)
    marks = _benchmark_marks(model) if method == "auto" else None
    if marks is not None:
        starts, ends, labels = marks
        detail = f"{len(starts)} benchmark annotations ({', '.join(sorted(set(labels))[:3])})"
        return _assemble(work, "benchmark_marks", 1.0, detail, starts, ends, labels, None)
    return _from_repeats(model, work)


def _nothing() -> tuple[np.ndarray, np.ndarray, list[str]]:
    return np.empty(0), np.empty(0), []


def launching_threads(model: TraceModel) -> np.ndarray | None:
    """Per uid, whether its (pid, tid) launched GPU work; None when nothing is linked (a
    GPU-only trace), so no thread can be told apart."""
    launch = model.gpu["launch"].to_numpy()
    launch = launch[launch != MISSING]
    if len(launch) == 0:
        return None
    codes = model.thread_code
    return np.isin(codes, np.unique(codes[launch]))


def _profiler_steps(model: TraceModel) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Union span per `ProfilerStep#N` name (one step can appear on several threads). A step
    mark on a thread that launched no GPU work is no iteration (a stray annotation)."""
    ev = model.events
    is_step = ev["cat"].isin(STEP_CATEGORIES).to_numpy() & name_matches(
        ev["name"], lambda n: STEP_NAME.fullmatch(n) is not None
    )
    launching = launching_threads(model)
    if launching is not None:
        is_step = is_step & launching
    if not is_step.any():
        return None
    steps = pd.DataFrame(
        {
            "label": model.names[is_step],
            "start": ev["ts"].to_numpy()[is_step],
            "end": (ev["ts"] + ev["dur"].fillna(0)).to_numpy()[is_step],
        }
    )
    spans = steps.groupby("label").agg(start=("start", "min"), end=("end", "max"))
    spans = spans.sort_values("start")
    return spans["start"].to_numpy(), spans["end"].to_numpy(), list(spans.index)


def _optimizer_steps(model: TraceModel) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """Iterations that each end with an `Optimizer.step#` annotation on a launching thread:
    the first from the thread's first top-level operator, each next from the step before."""
    ev = model.events
    is_step = (ev["cat"] == "user_annotation").to_numpy() & name_matches(
        ev["name"], lambda n: OPTIMIZER_STEP.fullmatch(n) is not None
    )
    launching = launching_threads(model)
    if launching is not None:
        is_step = is_step & launching
    uids = np.flatnonzero(is_step)
    if len(uids) < 2:
        return None
    ends = np.sort((ev["ts"] + ev["dur"].fillna(0)).to_numpy()[uids])
    # the first iteration runs from the first host event of the threads that launch work
    host = ev["cat"].isin(("cpu_op", "user_annotation", "python_function")).to_numpy()
    if launching is not None:
        host = host & launching
    first = float(ev["ts"].to_numpy()[host].min()) if host.any() else float(ends[0])
    starts = np.concatenate([[min(first, ends[0])], ends[:-1]])
    return starts, ends, [f"optimizer step {k}" for k in range(len(ends))]


def _benchmark_marks(model: TraceModel) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """A benchmark's own annotations around each repetition (`warmup`, `measure`,
    `iteration N`) on a launching thread: at least two, none inside another, each holding
    GPU launches; each is an iteration, in time order."""
    ev = model.events
    is_mark = (ev["cat"] == "user_annotation").to_numpy() & name_matches(
        ev["name"], lambda n: BENCHMARK_MARK.fullmatch(n.strip()) is not None
    )
    launching = launching_threads(model)
    if launching is not None:
        is_mark = is_mark & launching
    uids = np.flatnonzero(is_mark)
    if len(uids) < 2:
        return None
    start = ev["ts"].to_numpy(dtype=np.float64)[uids]
    end = start + np.nan_to_num(ev["dur"].to_numpy(dtype=np.float64)[uids])
    order = np.argsort(start, kind="stable")
    uids, start, end = uids[order], start[order], end[order]
    if np.any(start[1:] < end[:-1]):  # nested or overlapping marks are not repetitions
        return None
    launch = model.gpu["launch"].to_numpy()
    launch_ts = np.sort(model.events["ts"].to_numpy(dtype=np.float64)[launch[launch != MISSING]])
    holds = np.searchsorted(launch_ts, end) - np.searchsorted(launch_ts, start)
    if np.any(holds == 0):
        return None
    return start, end, [str(model.names[u]).strip() for u in uids]


def _main_thread_ops(model: TraceModel) -> pd.DataFrame:
    """Top-level cpu_ops (no cpu_op above them) of the thread whose top-level ops span longest.
    Only recorded ones: operators grafted from a graph capture sit inside their replay's
    launch call, layer after layer, and would repeat at the period of a layer, not a step."""
    ev = model.events
    is_op = (ev["cat"] == "cpu_op").to_numpy()
    if model.recorded_events >= 0:
        is_op = is_op & (np.arange(len(is_op)) < model.recorded_events)
    uids = np.flatnonzero(is_op)
    top = uids[nearest_ancestor(model.tree.parent, is_op, uids) == MISSING]
    ops = pd.DataFrame(
        {
            "uid": top,
            "pid": ev["pid"].to_numpy()[top],
            "tid": ev["tid"].to_numpy()[top],
            "start": ev["ts"].to_numpy()[top],
            "end": (ev["ts"] + ev["dur"].fillna(0)).to_numpy()[top],
        }
    )
    if ops.empty:
        return ops
    per = ops.groupby(["pid", "tid"]).agg(first=("start", "min"), last=("end", "max"))
    pid, tid = (per["last"] - per["first"]).idxmax()
    return ops[(ops["pid"] == pid).to_numpy() & (ops["tid"] == tid).to_numpy()].sort_values(
        "start", kind="stable"
    )


def _from_repeats(model: TraceModel, work: GpuWork) -> Iterations:
    ops = _main_thread_ops(model)
    names = model.names[ops["uid"].to_numpy()] if len(ops) else np.empty(0, dtype=object)
    codes = pd.factorize(pd.Series(names, dtype=object))[0]
    start, end = ops["start"].to_numpy(), ops["end"].to_numpy()
    period = find_period(codes, start, end)
    if period is None:
        detail = f"no repeating sequence among {len(ops)} top-level operators of the main thread"
        return _assemble(work, "none", 0.0, detail, *_nothing(), None)
    first = period.phase + period.length * np.arange(period.repeats)
    last = first + period.length - 1
    it_start = start[first]
    it_end = np.append(it_start[1:], np.max(end[: last[-1] + 1]))
    labels = [f"iteration {k}" for k in range(period.repeats)]
    coverage = period.repeats * period.length / len(codes)
    detail = (
        f"{period.repeats} repeats of {period.length} top-level operators on the main thread "
        f"(first: {names[first[0]]}), {coverage:.0%} of its operators; "
        f"{period.score:.1%} of operators recur one period later"
    )
    found = _assemble(
        work, "repeating_ops", period.score, detail, it_start, it_end, labels, period.length
    )
    confident = found.confident and coverage >= HIGH_COVERAGE
    return found.model_copy(update={"coverage": coverage, "confident": confident})


def _assemble(
    work: GpuWork,
    method: IterationMethod,
    confidence: float,
    detail: str,
    starts: np.ndarray,
    ends: np.ndarray,
    labels: list[str],
    period_ops: int | None,
) -> Iterations:
    origin = work.window[0]
    n = len(starts)
    owner = _owner(work.launch_ts, starts, ends)
    mine = owner >= 0
    g = owner[mine]
    counts = np.bincount(g, minlength=n)
    gpu_start = np.full(n, np.nan)
    gpu_end = np.full(n, np.nan)
    np.fmin.at(gpu_start, g, work.start[mine])
    np.fmax.at(gpu_end, g, work.end[mine])
    busy = grouped_union_length(g, work.start[mine], work.end[mine])
    busy = np.pad(busy, (0, n - len(busy)))
    open_end = np.zeros(n, dtype=bool)
    if method == "repeating_ops" and n:
        open_end[-1] = True
    iterations = [
        Iteration(
            index=k,
            label=labels[k],
            host_start_ms=(starts[k] - origin) / 1e3,
            host_end_ms=(ends[k] - origin) / 1e3,
            host_ms=(ends[k] - starts[k]) / 1e3,
            open_end=bool(open_end[k]),
            gpu_start_ms=None if counts[k] == 0 else (gpu_start[k] - origin) / 1e3,
            gpu_end_ms=None if counts[k] == 0 else (gpu_end[k] - origin) / 1e3,
            gpu_span_ms=0.0 if counts[k] == 0 else (gpu_end[k] - gpu_start[k]) / 1e3,
            gpu_busy_ms=float(busy[k]) / 1e3,
            gpu_events=int(counts[k]),
        )
        for k in range(n)
    ]
    host_ms = (ends - starts) / 1e3
    closed = host_ms[~open_end] if (~open_end).sum() >= 1 else host_ms
    return Iterations(
        method=method,
        confidence=confidence,
        confident=method == "profiler_step" or confidence >= HIGH_CONFIDENCE,
        detail=detail,
        origin_us=origin,
        period_ops=period_ops,
        iterations=iterations,
        time_per_iteration=Spread.of(closed),
        gpu_span=Spread.of([it.gpu_span_ms for it in iterations if it.gpu_events]),
        gpu_busy=Spread.of([it.gpu_busy_ms for it in iterations if it.gpu_events]),
        gaps=_gaps(work, starts, ends, gpu_start, gpu_end),
    )


def _owner(launch_ts: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Index of the iteration whose host span holds each launch time, or -1."""
    if len(starts) == 0:
        return np.full(len(launch_ts), MISSING, dtype=np.int64)
    k = np.searchsorted(starts, launch_ts, side="right") - 1
    inside = (k >= 0) & ~np.isnan(launch_ts)
    inside &= launch_ts <= ends[np.maximum(k, 0)]
    return np.where(inside, k, MISSING)


def _gaps(
    work: GpuWork,
    starts: np.ndarray,
    ends: np.ndarray,
    gpu_start: np.ndarray,
    gpu_end: np.ndarray,
) -> list[IterationGap]:
    if len(starts) < 2:
        return []
    gpu_gap = gpu_start[1:] - gpu_end[:-1]
    idle = length_within(work.idle, np.nan_to_num(gpu_end[:-1]), np.nan_to_num(gpu_start[1:]))
    return [
        IterationGap(
            after=k,
            host_gap_ms=float(starts[k + 1] - ends[k]) / 1e3,
            gpu_gap_ms=None if np.isnan(gpu_gap[k]) else float(gpu_gap[k]) / 1e3,
            gpu_idle_ms=0.0 if np.isnan(gpu_gap[k]) else float(idle[k]) / 1e3,
        )
        for k in range(len(starts) - 1)
    ]
