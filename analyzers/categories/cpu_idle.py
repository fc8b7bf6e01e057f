"""`cpu_idle_metrics.json`: how much of the run the GPU sat idle, and why
(docs/analysis.md#cpu-idle, docs/analysis.md#host-side).

`gpu_utilization` rounds times to 3 decimals and percents to 2; `idle_flagged` compares the
unrounded idle percent with IDLE_THRESHOLD_PERCENT (strictly greater). `kernel_analysis`
counts the kernels the timeline counts (TraceLens writes it empty on real perf reports), and
`host_side` gives the iterations and their phases, the idle time split by named cause with
the calls behind each, the call sites the host waited in and the launch queue, when the run's
trace model was at hand.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from ..markdown_text import md_code
from ..prepare.document_base import OmitNone
from ..trace.idle_attribution import Culprit
from ..trace.idle_causes import CallSite, IdleBreakdown, IterationIdle
from ..trace.iterations import IterationMethod, Iterations, Spread
from ..trace.kernel_counts import KernelCounts
from ..trace.launch_queue import LaunchQueue
from ..trace.phases import PhaseSummary
from ..trace.time_ranges import KEPT, TimeRange, TimeRanges
from .system_inputs import NO_TIME, SystemInputs

IDLE_THRESHOLD_PERCENT = 15.0


class GpuUtilizationSummary(BaseModel):
    total_time_ms: float
    idle_time_ms: float
    idle_time_percent: float
    computation_percent: float
    communication_percent: float
    memcpy_percent: float


class KernelAnalysis(BaseModel):
    short_kernel_count: int = 0
    total_kernel_count: int = 0
    avg_kernel_time_us: float = 0
    kernel_count_by_category: dict[str, int] = Field(default_factory=dict)


class IterationSummary(BaseModel):
    method: IterationMethod
    confident: bool
    count: int
    mean_ms: float
    median_ms: float
    cv: float
    min_ms: float
    max_ms: float
    growing: bool = False  # the steady iterations keep getting slower: no median stands for them
    phase_detail: str = ""  # warm-up excluded, steady iterations, growth (trace/phases.py)
    warmup_detail: str = ""  # what the warm-up and set-up spent their idle in, when excluded


class IdleCauseShare(BaseModel):
    cause: str
    label: str
    idle_ms: float
    percent_of_idle: float
    percent_of_window: float
    steady_ms: float | None = None  # inside steady-state iterations; None without iterations
    culprits: list[Culprit] = Field(default_factory=list)  # the calls behind it, most first
    time_ranges: TimeRanges | None = None  # its idle gaps on the trace's clock (µs)


MAX_ITERATION_ROWS = 64  # the per-iteration table is cut here (the first ones, in order)
TOP_CULPRITS = 3


class HostSide(BaseModel):
    iterations: IterationSummary | None
    phases: PhaseSummary | None = None
    idle_by_phase_ms: dict[str, float] | None = None  # setup/warmup/steady/tail; None: no phases
    idle_causes: list[IdleCauseShare]
    call_sites: list[CallSite]
    queue: LaunchQueue | None = None
    host_recorded: bool = True  # False: a GPU-only trace, which can name no host cause
    host_partial: bool = False  # the host side was filtered: a named cause is a lower bound
    per_iteration: list[IterationIdle] = Field(default_factory=list)
    # on the trace's clock (µs): each iteration's host span (the first MAX_ITERATION_ROWS)
    # and the warm-up's span (None without one)
    iteration_ranges: list[TimeRange] = Field(default_factory=list)
    warmup_range: TimeRange | None = None


class CpuIdleMetrics(OmitNone):
    """OK: status, idle_flagged, gpu_utilization, kernel_analysis, impact_estimates.
    ERROR: status, error."""

    status: Literal["OK", "ERROR"]
    error: str | None = None
    idle_flagged: bool | None = None
    gpu_utilization: GpuUtilizationSummary | None = None
    kernel_analysis: KernelAnalysis | None = None
    impact_estimates: list[dict[str, Any]] | None = None
    host_side: HostSide | None = None


def idle_flagged(idle_percent: float) -> bool:
    return idle_percent > IDLE_THRESHOLD_PERCENT


def analyze_cpu_idle(inputs: SystemInputs) -> CpuIdleMetrics:
    """The CPU/idle document of a run; an ERROR document when it has no GPU time at all."""
    timeline = inputs.any_timeline()
    if timeline.total_ms <= 0:
        return CpuIdleMetrics(status="ERROR", error="the run has no GPU time (total_time is 0)")
    idle = timeline.idle_time or NO_TIME
    idle_pct = idle.percent
    util = GpuUtilizationSummary(
        total_time_ms=round(timeline.total_ms, 3),
        idle_time_ms=round(idle.time_ms, 3),
        idle_time_percent=round(idle_pct, 2),
        computation_percent=round((timeline.computation_time or NO_TIME).percent, 2),
        communication_percent=round((timeline.exposed_comm_time or NO_TIME).percent, 2),
        memcpy_percent=round((timeline.exposed_memcpy_time or NO_TIME).percent, 2),
    )
    return CpuIdleMetrics(
        status="OK",
        idle_flagged=idle_flagged(idle_pct),
        gpu_utilization=util,
        kernel_analysis=_kernel_analysis(inputs.kernels),
        impact_estimates=[],
        host_side=host_side(inputs.idle),
    )


def _kernel_analysis(counts: KernelCounts | None) -> KernelAnalysis:
    if counts is None:
        return KernelAnalysis()
    return KernelAnalysis(
        short_kernel_count=counts.short,
        total_kernel_count=counts.total,
        avg_kernel_time_us=round(counts.mean_us, 3),
        kernel_count_by_category=dict(counts.by_bucket),
    )


WARMUP_CAUSES_SHOWN = 3


def warmup_sentence(idle: IdleBreakdown) -> str:
    """`11,776.98 ms of GPU idle in warm-up, before the steady state: 11,500.00 ms memory allocator
    (`cudaFree`), …; one-time initialisation, excluded from the priorities` ("" without a
    warm-up or set-up idle)."""
    if idle.phases is None or not (idle.phases.warmup or idle.phases.setup_ms > 0):
        return ""
    early = sorted(
        ((p.by_phase_ms["warmup"] + p.by_phase_ms["setup"], p) for p in idle.parts),
        key=lambda pair: -pair[0],
    )
    early = [(ms, p) for ms, p in early if ms >= 0.0005]
    if not early:
        return ""
    shown = []
    for ms, part in early[:WARMUP_CAUSES_SHOWN]:
        culprit = f" ({md_code(part.culprits[0].name, 60)})" if part.culprits else ""
        shown.append(f"{ms:,.2f} ms {part.label}{culprit}")
    total = sum(ms for ms, _ in early)
    return (
        f"{total:,.2f} ms of GPU idle {_before(idle.phases)}: {'; '.join(shown)}; one-time "
        "initialisation, excluded from the priorities"
    )


def _before(phases: PhaseSummary) -> str:
    """Where the excluded idle lies: set-up (before the first iteration), warm-up or both."""
    if not phases.warmup:
        return "in set-up, before the first iteration"
    if phases.setup_ms > 0:
        return "in set-up and warm-up, before the steady state"
    return "in warm-up, before the steady state"


def host_side(idle: IdleBreakdown | None) -> HostSide | None:
    """The host-side summary of an idle breakdown (None without one)."""
    if idle is None:
        return None
    found = idle.iterations
    spread = found.time_per_iteration
    if idle.phases is not None and idle.phases.warmup and idle.phases.steady_ms:
        # the figures stand for the steady state; the warm-up is said apart
        spread = Spread.of(np.array(idle.phases.steady_ms))
    iterations = None
    if found.iterations and spread.count:
        iterations = IterationSummary(
            method=found.method,
            confident=found.confident,
            count=len(found.iterations),
            mean_ms=round(spread.mean_ms, 3),
            median_ms=round(spread.median_ms, 3),
            cv=round(spread.cv, 3),
            min_ms=round(spread.min_ms, 3),
            max_ms=round(spread.max_ms, 3),
            growing=bool(idle.phases and idle.phases.growing),
            phase_detail=idle.phases.detail if idle.phases else "",
            warmup_detail=warmup_sentence(idle),
        )
    causes = [
        IdleCauseShare(
            cause=part.cause,
            label=part.label,
            idle_ms=round(part.idle_ms, 3),
            percent_of_idle=round(part.percent_of_idle, 2),
            percent_of_window=round(part.percent_of_window, 2),
            steady_ms=None if idle.phases is None else round(part.by_phase_ms["steady"], 3),
            culprits=part.culprits[:TOP_CULPRITS],
            time_ranges=part.ranges.brief(KEPT) if part.ranges else None,
        )
        for part in idle.parts
    ]
    return HostSide(
        iterations=iterations,
        phases=idle.phases,
        idle_by_phase_ms=None
        if idle.phases is None
        else {p: round(ms, 3) for p, ms in idle.idle_by_phase_ms.items()},
        idle_causes=causes,
        call_sites=idle.call_sites,
        queue=idle.queue,
        host_recorded=idle.host_recorded,
        host_partial=idle.host_partial,
        per_iteration=idle.per_iteration[:MAX_ITERATION_ROWS],
        iteration_ranges=_iteration_ranges(found)[:MAX_ITERATION_ROWS],
        warmup_range=_warmup_range(found, idle.phases),
    )


def _iteration_ranges(found: Iterations) -> list[TimeRange]:
    lo, hi = found.host_spans_us()
    return [TimeRange(start_us=float(a), end_us=float(b)) for a, b in zip(lo, hi, strict=True)]


def _warmup_range(found: Iterations, phases: PhaseSummary | None) -> TimeRange | None:
    """From the first warm-up iteration's host start to the first steady one's."""
    if phases is None or not phases.warmup:
        return None
    lo, hi = found.host_spans_us()
    end = lo[phases.steady[0]] if phases.steady else hi[max(phases.warmup)]
    return TimeRange(start_us=float(lo[min(phases.warmup)]), end_us=float(end))
