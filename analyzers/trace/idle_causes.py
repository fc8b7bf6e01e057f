"""Why the GPU sat idle: every idle millisecond of the timeline given a named cause, the
calls behind it, the phases of the window and how far ahead of the GPU the host ran.

The idle set is the one `gpu_timeline` measures (idle_window.py), so the causes add up to
its `idle_time`. The split itself is idle_attribution.py's (precedence: host_causes.CAUSES);
the phases (phases.py) say which of it belongs to warm-up, steady state, set-up and tail.
Definitions: docs/analysis.md#idle-causes.
"""

from __future__ import annotations

import numpy as np
from pydantic import Field

from .host_blocking import (
    BlockingCalls,
    blocking_calls,
    call_site_table,
    charged_within,
)
from .host_causes import CAUSES, IdleCause, cause_masks
from .host_filter import filtered_host
from .idle_attribution import CauseIdle, attribute, cause_table
from .idle_window import GpuWork, gpu_work, intersect, length_within
from .intervals import merge
from .iterations import Frozen, Iterations, find_iterations
from .launch_bound import Stretches, launch_bound_stretches
from .launch_queue import LaunchQueue, launch_queue
from .model import TraceModel
from .phases import PHASES, Phase, PhaseSummary, find_phases

__all__ = ["CAUSES", "IdleBreakdown", "IdleCause", "idle_causes"]
TOP_CALL_SITES = 10


class CallSite(Frozen):
    call: str
    operator: str  # outermost cpu_op around the call
    op_chain: str  # every cpu_op from the outermost down, " > " between
    module: str  # innermost nn.Module class, "" when the trace has none
    frame: str  # innermost user Python frame (not torch's own), "" when none
    count: int
    wait_ms: float  # host time spent inside the calls
    idle_ms: float  # GPU idle charged to them (their share of host_blocking)


class LaunchBoundStretch(Frozen):
    start_ms: float
    end_ms: float
    events: int
    idle_ms: float
    median_event_us: float
    median_gap_us: float


class IterationIdle(Frozen):
    """One iteration's GPU idle and the cause that holds most of it."""

    index: int
    label: str
    phase: Phase
    host_ms: float
    gpu_busy_ms: float
    idle_ms: float
    main_cause: IdleCause | None
    main_cause_ms: float
    # the causes with idle in it, in CAUSES order
    idle_by_cause_ms: dict[IdleCause, float] = Field(default_factory=dict)


class IdleBreakdown(Frozen):
    window_ms: float
    busy_ms: float
    idle_ms: float
    parts: list[CauseIdle]  # in CAUSES order, the precedence
    call_sites: list[CallSite]
    blocking_calls: int
    stretches: list[LaunchBoundStretch]
    iterations: Iterations
    phases: PhaseSummary | None  # None when no iteration was found
    idle_by_phase_ms: dict[Phase, float]
    per_iteration: list[IterationIdle]
    queue: LaunchQueue | None
    # the trace recorded CPU activity (operators, annotations, frames): a CUDA-only capture
    # holds runtime calls at most, which say when the host launched, not what it did
    host_recorded: bool
    host_partial: bool = False  # the host side was filtered to its launches (host_filter.py)

    @property
    def one_off_idle_ms(self) -> float:
        """GPU idle outside the steady state (set-up, warm-up, tail): a one-time cost that no
        fix wins back per step; 0 without a steady state to set it against."""
        if self.phases is None or not self.phases.steady:
            return 0.0
        return sum(self.idle_by_phase_ms[p] for p in PHASES if p != "steady")

    def part(self, cause: IdleCause) -> CauseIdle:
        return next(p for p in self.parts if p.cause == cause)

    def priced_ms(self, cause: IdleCause) -> float:
        """The idle of a cause that a fix can win back: the steady state's when the window
        has one, else all of it (a warm-up-only window is priced by the caller)."""
        part = self.part(cause)
        if self.phases is None:
            return part.idle_ms
        return part.by_phase_ms["steady"]


def idle_causes(
    model: TraceModel,
    *,
    iterations: Iterations | None = None,
    include_unlinked: bool = False,
    top: int = TOP_CALL_SITES,
) -> IdleBreakdown:
    """Split the GPU idle time of the timeline's window into causes (see module docstring)."""
    work = gpu_work(model, include_unlinked=include_unlinked)
    if iterations is None:
        iterations = find_iterations(model, include_unlinked=include_unlinked)
    masks = cause_masks(model)
    phases = find_phases(iterations, work.window, _one_off_us(model, masks, iterations))
    blocking = blocking_calls(model, work)
    stretches = launch_bound_stretches(work)
    attribution = attribute(model, work, blocking, stretches, phases, masks)
    parts = cause_table(model, attribution, work, phases)
    return IdleBreakdown(
        window_ms=work.window_us / 1e3,
        busy_ms=work.busy.length() / 1e3,
        idle_ms=work.idle.length() / 1e3,
        parts=parts,
        call_sites=_call_sites(charged_within(blocking, attribution.pieces["sync"]), top),
        blocking_calls=len(blocking.table),
        stretches=_stretches(stretches, work.window[0]),
        iterations=iterations,
        phases=phases.summary,
        idle_by_phase_ms={
            p: intersect(work.idle, phases.regions[p]).length() / 1e3 for p in PHASES
        },
        per_iteration=_per_iteration(iterations, attribution.pieces, work, phases.summary),
        queue=launch_queue(work),
        host_recorded=bool(
            model.events["cat"].isin(("cpu_op", "user_annotation", "python_function")).any()
        ),
        host_partial=filtered_host(model) is not None,
    )


def _one_off_us(model: TraceModel, masks, iterations: Iterations) -> np.ndarray:
    """Host time inside each iteration's span spent in one-off calls."""
    its = iterations.iterations
    uids = np.flatnonzero(masks["one_off"])
    ev = model.events
    start = ev["ts"].to_numpy(dtype=np.float64)[uids]
    one_off = merge(start, start + np.nan_to_num(ev["dur"].to_numpy(dtype=np.float64)[uids]))
    lo, hi = iterations.host_spans_us()
    return length_within(one_off, lo, hi) if len(its) else np.zeros(0)


def _per_iteration(
    iterations: Iterations, pieces, work: GpuWork, summary: PhaseSummary | None
) -> list[IterationIdle]:
    its = iterations.iterations
    if not its or summary is None:
        return []
    lo, hi = iterations.host_spans_us()
    by_cause = np.stack([length_within(pieces[c], lo, hi) for c in CAUSES], axis=1)
    idle = length_within(work.idle, lo, hi)
    main = by_cause.argmax(axis=1)
    warm = set(summary.warmup)
    return [
        IterationIdle(
            index=it.index,
            label=it.label,
            phase="warmup" if k in warm else "steady",
            host_ms=it.host_ms,
            gpu_busy_ms=it.gpu_busy_ms,
            idle_ms=float(idle[k]) / 1e3,
            main_cause=CAUSES[main[k]] if by_cause[k, main[k]] > 0 else None,
            main_cause_ms=float(by_cause[k, main[k]]) / 1e3,
            idle_by_cause_ms={
                c: round(float(by_cause[k, j]) / 1e3, 3)
                for j, c in enumerate(CAUSES)
                if by_cause[k, j] > 0
            },
        )
        for k, it in enumerate(its)
    ]


def _call_sites(blocking: BlockingCalls, top: int) -> list[CallSite]:
    table = call_site_table(blocking).head(top)
    return [
        CallSite(
            call=str(row.call),
            operator=str(row.operator),
            op_chain=str(row.op_chain),
            module=str(row.module),
            frame=str(row.frame),
            count=int(row.count),
            wait_ms=float(row.wait_us) / 1e3,
            idle_ms=float(row.idle_us) / 1e3,
        )
        for row in table.itertuples(index=False)
    ]


def _stretches(stretches: Stretches, origin: float) -> list[LaunchBoundStretch]:
    return [
        LaunchBoundStretch(
            start_ms=(row.start - origin) / 1e3,
            end_ms=(row.end - origin) / 1e3,
            events=int(row.events),
            idle_ms=row.idle_us / 1e3,
            median_event_us=float(row.median_event_us),
            median_gap_us=float(row.median_gap_us),
        )
        for row in stretches.table.itertuples(index=False)
    ]
