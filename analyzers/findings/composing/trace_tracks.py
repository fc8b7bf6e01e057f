"""rooflens's findings as Chrome trace events: the tracks `annotated_trace.json.gz` adds to
the trace (docs/trace-viewer.md#the-tracks).

One process of its own ("rooflens findings", a pid the trace does not use) holds a thread
for the iterations and the warm-up, one per idle cause with each gap attributed to it, and
one per P-item with the ranges it happens in. Every range is a complete event (`ph: "X"`);
the ranges of one thread are merged so none overlaps (a trace viewer nests slices of a
thread, and overlapping ones would not nest). Names and args are data: the JSON writer
escapes them, and a name from the trace is cut to one bounded line (`plain_line`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Real
from typing import Any

from ...categories.cpu_idle import HostSide
from ...markdown_text import plain_line
from ...trace.time_ranges import TimeRange, TimeRanges
from ..ranking.impact_scale import PriorityItem

PROCESS_NAME = "rooflens findings"
ITERATIONS_TID, FIRST_CAUSE_TID = 1, 10
FIRST_ITEM_TID = 100  # P-number n is thread FIRST_ITEM_TID + n: P-items sort after causes
NAME_LIMIT = 160


def findings_pid(pids: Iterable[Any]) -> int:
    """A pid no event of the trace uses: one above the largest integer pid."""
    numbers = [int(p) for p in pids if isinstance(p, Real) and p == p]
    return max(numbers, default=0) + 1


@dataclass(frozen=True)
class IdleTrack:
    """One idle cause's track: its key, label, total idle and gaps."""

    cause: str
    label: str
    idle_ms: float
    ranges: TimeRanges


def track_events(
    pid: int,
    items: Sequence[PriorityItem],
    host: HostSide | None,
    causes: Sequence[IdleTrack] | None = None,
) -> list[dict[str, Any]]:
    """The findings' tracks as trace events (metadata first). `causes`: the idle causes'
    tracks (default: the ranges `host` keeps)."""
    events = [_meta("process_name", pid, 0, name=PROCESS_NAME)]
    events.append(_meta("process_sort_index", pid, 0, sort_index=-1))
    if host is not None and host.iteration_ranges:
        events.append(_meta("thread_name", pid, ITERATIONS_TID, name="Iterations and warm-up"))
        labels = [it.label for it in host.per_iteration]
        for k, span in enumerate(host.iteration_ranges):
            label = labels[k] if k < len(labels) else f"iteration {k + 1}"
            args = {"iteration": k + 1, "host_ms": round(span.dur_us / 1e3, 3)}
            events += _spans(pid, ITERATIONS_TID, plain_line(label, NAME_LIMIT), [span], args)
        if host.warmup_range is not None:
            tid = ITERATIONS_TID + 1
            events.append(_meta("thread_name", pid, tid, name="Warm-up (excluded from savings)"))
            events += _spans(pid, tid, "warm-up", [host.warmup_range], {"phase": "warmup"})
    if causes is None:
        shares = host.idle_causes if host is not None else []
        causes = [IdleTrack(c.cause, c.label, c.idle_ms, c.time_ranges)
                  for c in shares if c.time_ranges]  # fmt: skip
    for k, cause in enumerate(causes):
        tid = FIRST_CAUSE_TID + k
        label = plain_line(cause.label, NAME_LIMIT)
        events.append(_meta("thread_name", pid, tid, name=f"Idle: {label}"))
        ranges = cause.ranges
        args = {
            "cause": cause.cause,
            "idle_ms": round(cause.idle_ms, 3),
            "gaps_in_all": ranges.count,
            "gaps_shown": len(ranges.longest),
        }
        events += _spans(pid, tid, f"idle: {label}", ranges.longest, args)
    for item in items:
        if item.time_ranges is None:
            continue
        tid = FIRST_ITEM_TID + item.p_number
        title = plain_line(item.title, NAME_LIMIT)
        events.append(_meta("thread_name", pid, tid, name=f"P{item.p_number}: {title}"))
        events += _spans(pid, tid, f"P{item.p_number}: {title}", *_item_ranges(item))
    named = sorted({e["tid"] for e in events if e["name"] == "thread_name"})
    return events + [_meta("thread_sort_index", pid, t, sort_index=t) for t in named]


def _item_ranges(item: PriorityItem) -> tuple[list[TimeRange], dict[str, Any]]:
    ranges: TimeRanges = item.time_ranges  # type: ignore[assignment]
    args: dict[str, Any] = {
        "p": item.p_number,
        "category": item.category,
        "kind": item.kind,
        "ranges_in_all": ranges.count,
        "ranges_shown": len(ranges.longest),
        "saving_mid_ms": round(item.saving.mid_ms, 3) if item.saving else None,
        "percent_of_window_mid": item.percent_mid,
    }
    return ranges.longest, args


def _spans(
    pid: int, tid: int, name: str, ranges: Sequence[TimeRange], args: dict[str, Any]
) -> list[dict[str, Any]]:
    """Complete events over the union of `ranges` (merged: no two overlap)."""
    merged: list[list[float]] = []
    for r in sorted(ranges, key=lambda r: r.start_us):
        if merged and r.start_us <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], r.end_us)
        else:
            merged.append([r.start_us, r.end_us])
    return [
        {
            "ph": "X",
            "cat": "rooflens",
            "name": name,
            "pid": pid,
            "tid": tid,
            "ts": round(start, 3),
            "dur": round(end - start, 3),
            "args": args,
        }
        for start, end in merged
    ]


def _meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": args}
