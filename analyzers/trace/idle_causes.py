"""Why the GPU sat idle: the timeline's idle time split into causes, and the calls behind it.

The idle set is the one `gpu_timeline` measures (idle_window.py), so the parts add up to its
`idle_time`. Each idle instant goes to the first cause of CAUSES whose region covers it:
host blocking, launch-bound stretches, between iterations, before the first / after the
last iteration, and the rest, other host work. Definitions: docs/analysis.md#host-side.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from rooflens.analyzers.trace.columns import MISSING, name_matches
from rooflens.analyzers.trace.host_blocking import BlockingCalls, blocking_calls, call_site_table
from rooflens.analyzers.trace.idle_window import (
    GpuWork,
    between,
    gpu_work,
    intersect,
    length_within,
)
from rooflens.analyzers.trace.intervals import Intervals, merge, subtract
from rooflens.analyzers.trace.iterations import STEP_NAME, Frozen, Iterations, find_iterations
from rooflens.analyzers.trace.launch_bound import Stretches, launch_bound_stretches
from rooflens.analyzers.trace.model import TraceModel
from rooflens.analyzers.trace.tree import nearest_ancestor

IdleCause = Literal["host_blocking", "launch_bound", "between_iterations", "edges", "other_host"]
CAUSES: tuple[IdleCause, ...] = (
    "host_blocking",
    "launch_bound",
    "between_iterations",
    "edges",
    "other_host",
)
LABELS: dict[IdleCause, str] = {
    "host_blocking": "host blocked in a synchronising call",
    "launch_bound": "launch-bound stretches",
    "between_iterations": "between iterations",
    "edges": "before the first / after the last iteration",
    "other_host": "other host work",
}
TOP_ACTIVITIES = 5
TOP_CALL_SITES = 10


class HostActivity(Frozen):
    """Host spans of one name overlapping a cause's idle time (spans on several threads
    can overlap, so rows of one cause may add up to more than the cause)."""

    name: str
    overlap_ms: float
    count: int


class CausePart(Frozen):
    cause: IdleCause
    label: str
    idle_ms: float
    percent_of_idle: float
    percent_of_window: float
    host_activity: list[HostActivity]
    no_operator_ms: float  # idle of this cause with no cpu_op/annotation/runtime call running


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


class IdleBreakdown(Frozen):
    window_ms: float
    busy_ms: float
    idle_ms: float
    parts: list[CausePart]  # in CAUSES order, the precedence
    call_sites: list[CallSite]
    blocking_calls: int
    stretches: list[LaunchBoundStretch]
    iterations: Iterations

    def part(self, cause: IdleCause) -> CausePart:
        return next(p for p in self.parts if p.cause == cause)


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
    blocking = blocking_calls(model, work)
    stretches = launch_bound_stretches(work)
    inner, outer = _iteration_regions(iterations, work)
    regions = {
        "host_blocking": blocking.region,
        "launch_bound": stretches.region,
        "between_iterations": inner,
        "edges": outer,
    }
    remaining = work.idle
    pieces: dict[IdleCause, Intervals] = {}
    for cause in CAUSES[:-1]:
        pieces[cause] = intersect(remaining, regions[cause])
        remaining = subtract(remaining, regions[cause])
    pieces["other_host"] = remaining
    spans = _host_spans(model)
    parts = [_part(cause, pieces[cause], work, spans) for cause in CAUSES]
    return IdleBreakdown(
        window_ms=work.window_us / 1e3,
        busy_ms=work.busy.length() / 1e3,
        idle_ms=work.idle.length() / 1e3,
        parts=parts,
        call_sites=_call_sites(blocking, top),
        blocking_calls=len(blocking.table),
        stretches=_stretches(stretches, work.window[0]),
        iterations=iterations,
    )


def _iteration_regions(iterations: Iterations, work: GpuWork) -> tuple[Intervals, Intervals]:
    """Between consecutive iterations' GPU spans; and the window outside the first-to-last."""
    spans = [it for it in iterations.iterations if it.gpu_events]
    if not spans:
        return Intervals.empty(), Intervals.empty()
    origin = iterations.origin_us
    start = np.array([origin + it.gpu_start_ms * 1e3 for it in spans])
    end = np.array([origin + it.gpu_end_ms * 1e3 for it in spans])
    reach = np.maximum.accumulate(end)
    inner = between(reach[:-1], start[1:])
    first, last = work.window
    outer = between(np.array([first, reach[-1]]), np.array([start.min(), last]))
    return inner, outer


def _host_spans(model: TraceModel) -> pd.DataFrame:
    """Top-level cpu_ops and user annotations (not ProfilerStep#), and every runtime call."""
    ev = model.events
    cat = ev["cat"]
    is_op = (cat == "cpu_op").to_numpy()
    uids = np.flatnonzero(is_op)
    top = uids[nearest_ancestor(model.tree.parent, is_op, uids) == MISSING]
    not_step = name_matches(ev["name"], lambda n: STEP_NAME.fullmatch(n) is None)
    notes = np.flatnonzero((cat == "user_annotation").to_numpy() & not_step)
    runtime = np.flatnonzero(cat.isin(["cuda_runtime", "cuda_driver"]).to_numpy())
    uid = np.concatenate([top, notes, runtime])
    start = ev["ts"].to_numpy(dtype=np.float64)[uid]
    end = start + np.nan_to_num(ev["dur"].to_numpy(dtype=np.float64)[uid])
    named = np.concatenate([np.ones(len(top) + len(notes), bool), np.zeros(len(runtime), bool)])
    return pd.DataFrame({"name": model.names[uid], "start": start, "end": end, "named": named})


def _part(cause: IdleCause, piece: Intervals, work: GpuWork, spans: pd.DataFrame) -> CausePart:
    idle = piece.length()
    total_idle = work.idle.length()
    window = work.window_us
    activity: list[HostActivity] = []
    no_operator = idle
    if idle > 0 and len(spans):
        overlap = length_within(piece, spans["start"].to_numpy(), spans["end"].to_numpy())
        named = spans[spans["named"].to_numpy() & (overlap > 0)]
        by_name = (
            pd.DataFrame({"name": named["name"], "overlap": overlap[named.index]})
            .groupby("name", sort=False)["overlap"]
            .agg(["sum", "size"])
            .sort_values("sum", ascending=False)
            .head(TOP_ACTIVITIES)
        )
        activity = [
            HostActivity(name=str(name), overlap_ms=row["sum"] / 1e3, count=int(row["size"]))
            for name, row in by_name.iterrows()
        ]
        covered = merge(spans["start"].to_numpy(), spans["end"].to_numpy())
        no_operator = subtract(piece, covered).length()
    return CausePart(
        cause=cause,
        label=LABELS[cause],
        idle_ms=idle / 1e3,
        percent_of_idle=100.0 * idle / total_idle if total_idle > 0 else 0.0,
        percent_of_window=100.0 * idle / window if window > 0 else 0.0,
        host_activity=activity,
        no_operator_ms=no_operator / 1e3,
    )


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
