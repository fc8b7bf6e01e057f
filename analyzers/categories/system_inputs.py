"""What the system analyses (CPU/idle, multi-kernel, kernel fusion) read: one typed object
built in memory from the run's perf report and category data (docs/analysis.md)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import pandas as pd

from ..perf.platforms import Platform
from ..prepare.comparative_fusion import ComparativeCandidate
from ..prepare.copies import CopyData
from ..prepare.fusion import FusionCandidate
from ..prepare.manifest import Manifest
from ..prepare.multi_kernel import MultiKernelData
from ..trace.idle_causes import IdleBreakdown
from ..trace.kernel_counts import KernelCounts


@dataclass(frozen=True)
class TimelineRow:
    """One gpu_timeline row: its time in ms and in % of the total."""

    time_ms: float
    percent: float


NO_TIME = TimelineRow(0.0, 0.0)  # what a row the timeline lacks counts as, where it counts


@dataclass(frozen=True)
class Timeline:
    """The gpu_timeline rows the system analyses read; None where the table has no such row."""

    total_time: TimelineRow
    computation_time: TimelineRow | None = None
    exposed_comm_time: TimelineRow | None = None
    exposed_memcpy_time: TimelineRow | None = None
    idle_time: TimelineRow | None = None

    @property
    def total_ms(self) -> float:
        return self.total_time.time_ms

    @classmethod
    def from_sheet(cls, sheet: pd.DataFrame | None) -> Timeline | None:
        """The perf report's gpu_timeline table; None when it has no total_time row."""
        if sheet is None or sheet.empty or "type" not in sheet:
            return None
        cells = zip(
            sheet["type"].astype(str),
            sheet["time ms"].astype(float),
            sheet["percent"].astype(float),
            strict=True,
        )
        rows = {kind: TimelineRow(ms, pct) for kind, ms, pct in cells}  # the last row of a type
        if "total_time" not in rows:
            return None
        return cls(**{kind: row for kind, row in rows.items() if kind in TIMELINE_ROWS})

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> Timeline:
        """The manifest's gpu_utilization (a row's time is percent x total / 100); it has no
        total communication or memcpy rows."""
        util = manifest.gpu_utilization
        total = float(util.total_time_ms)

        def row(percent: float) -> TimelineRow:
            return TimelineRow(float(percent) * total / 100.0, float(percent))

        return cls(
            total_time=TimelineRow(total, 100.0),
            computation_time=row(util.computation_time_percent),
            exposed_comm_time=row(util.exposed_comm_time_percent),
            exposed_memcpy_time=row(util.exposed_memcpy_time_percent),
            idle_time=row(util.idle_time_percent),
        )


TIMELINE_ROWS = frozenset(f.name for f in fields(Timeline))


@dataclass(frozen=True)
class SystemInputs:
    """The run as the system analyses see it."""

    manifest: Manifest
    timeline: Timeline | None  # the perf report's gpu_timeline, when it has one
    multi_kernel: MultiKernelData | None
    fusion_candidates: list[FusionCandidate] | list[ComparativeCandidate]
    unified: pd.DataFrame | None  # the perf report's unified_perf_summary
    platform: Platform | None  # None: no platform known, no roofline
    idle: IdleBreakdown | None = None  # the idle time split by cause, when the model was at hand
    kernels: KernelCounts | None = None
    copies: CopyData | None = None  # every copy by name, when the model was at hand

    def any_timeline(self) -> Timeline:
        """The report's timeline, else the manifest's."""
        return self.timeline or Timeline.from_manifest(self.manifest)
