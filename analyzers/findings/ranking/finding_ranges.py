"""Where in the trace each finding happens (docs/trace-viewer.md): its time ranges on the
trace's clock, so the report, the tool results and the annotated trace can point at it.

An operator or fusion finding is at its kernel instances, exposed communication at its
collectives, exposed copies at the copies, an idle cause at the idle gaps attributed to it
(trace/idle_attribution.py), idle time with no cause named at every idle gap. A finding with
no events of its own (a precision item, the unmodelled kernels together) has no ranges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from ...layout import CPU_IDLE, MULTI_KERNEL
from ...trace.idle_window import gpu_work
from ...trace.model import TraceModel
from ...trace.time_ranges import KEPT, TimeRanges
from .finding_events import FindingEvents
from .impact_scale import Candidate
from .run_metrics import RunMetrics

EventsOf = Callable[[Candidate], FindingEvents | None]


C = TypeVar("C", bound=Candidate)


def located(
    found: list[C],
    run: RunMetrics,
    model: TraceModel | None,
    events_of: EventsOf,
    *,
    keep: int = KEPT,
    idle_causes: Sequence[TimeRanges | None] | None = None,
) -> list[C]:
    """Each candidate with its `time_ranges`, the `keep` longest listed (unchanged when it
    has none). `idle_causes`: each idle cause's ranges, in the idle analysis's order, when
    more of them than its metrics keep are wanted."""
    idle_gaps: list[TimeRanges | None] = []  # every idle gap, computed when first needed

    def whole_idle() -> TimeRanges | None:
        if not idle_gaps and model is not None:
            idle = gpu_work(model).idle
            idle_gaps.append(TimeRanges.of(idle.start, idle.end, keep))
        return idle_gaps[0] if idle_gaps else None

    causes = idle_causes
    if causes is None:
        host = run.cpu_idle.host_side if run.cpu_idle is not None else None
        causes = [c.time_ranges for c in host.idle_causes] if host is not None else []
    out = []
    for c in found:
        ranges = _ranges(c, causes, model, events_of, whole_idle, keep)
        out.append(c if ranges is None else c.model_copy(update={"time_ranges": ranges}))
    return out


def _ranges(
    c: Candidate,
    causes: Sequence[TimeRanges | None],
    model: TraceModel | None,
    events_of: EventsOf,
    whole_idle: Callable[[], TimeRanges | None],
    keep: int,
) -> TimeRanges | None:
    pool = c.saving.pool if c.saving else None
    if c.category == CPU_IDLE and pool == "idle":
        k = (c.source_rank or 0) - 1
        if c.source_rank and 0 <= k < len(causes):
            found = causes[k]
            return found.brief(keep) if found is not None else None
        return whole_idle()
    if model is None:
        return None
    if c.category == MULTI_KERNEL and pool == "exposed_memcpy":
        gpu = model.gpu
        uids = gpu.index.to_numpy()[(gpu["cat"] == "gpu_memcpy").to_numpy()]
        return _events(model, uids, keep)
    events = events_of(c)
    if events is None or events.empty:
        return None
    return _events(model, events.gpu if len(events.gpu) else events.host, keep)


def _events(model: TraceModel, uids: np.ndarray, keep: int) -> TimeRanges | None:
    """The ranges of the trace's events `uids` (their `ts` .. `ts + dur`)."""
    uids = np.asarray(uids, dtype=np.int64)
    ts = model.events["ts"].to_numpy(dtype=np.float64)[uids]
    dur = np.nan_to_num(model.events["dur"].to_numpy(dtype=np.float64)[uids])
    return TimeRanges.of(ts, ts + dur, keep)
