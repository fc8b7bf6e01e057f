"""`inspect`: load, link and measure a trace; return its GPU timeline and health in one model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .health import TraceHealth, assess
from .open_trace import AUTO, CaptureChoice, open_trace
from .timeline import Timeline


class TimelineRow(BaseModel):
    """One row of TraceLens's `gpu_timeline` sheet, with its column names."""

    model_config = ConfigDict(populate_by_name=True)

    type: str
    time_ms: float = Field(alias="time ms")
    percent: float


class DeviceTimeline(BaseModel):
    device: int
    gpu_timeline: list[TimelineRow]


class Inspection(BaseModel):
    """What `rooflens inspect` reports: pooled and per-device timelines, and trace health."""

    trace: str
    include_unlinked: bool
    gpu_timeline: list[TimelineRow]
    per_device: list[DeviceTimeline]
    health: TraceHealth


def _rows(timeline: Timeline) -> list[TimelineRow]:
    return [TimelineRow.model_validate(row) for row in timeline.rows()]


def inspect_trace(
    path: str | Path,
    *,
    include_unlinked: bool = False,
    captures: CaptureChoice = AUTO,
    allow: Callable[[Path], bool] | None = None,
) -> Inspection:
    """Everything `inspect` shows for one trace file."""
    model = open_trace(path, captures=captures, allow=allow)
    timeline = model.gpu_timeline(include_unlinked=include_unlinked)
    return Inspection(
        trace=Path(path).name,
        include_unlinked=include_unlinked,
        gpu_timeline=_rows(timeline.pooled),
        per_device=[
            DeviceTimeline(device=d, gpu_timeline=_rows(t))
            for d, t in sorted(timeline.per_device.items())
        ],
        health=assess(model),
    )
