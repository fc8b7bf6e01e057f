"""What the system analyses (CPU/idle, multi-kernel, kernel fusion) read: one typed object
built in memory from the run's perf report and category data (docs/analysis.md)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from pydantic import BaseModel

from ..perf.platforms import Platform
from ..prepare.comparative_fusion import ComparativeCandidate
from ..prepare.copies import CopyData
from ..prepare.fusion import FusionCandidate
from ..prepare.manifest import Manifest
from ..prepare.multi_kernel import MultiKernelData
from ..trace.idle_causes import IdleBreakdown
from ..trace.kernel_counts import KernelCounts


class Timeline(BaseModel):
    """gpu_timeline rows: type -> time in ms and percent of total."""

    time_ms: dict[str, float]
    percent: dict[str, float]

    @property
    def total_ms(self) -> float:
        return self.time_ms["total_time"]

    @classmethod
    def from_sheet(cls, sheet: pd.DataFrame | None) -> Timeline | None:
        """The perf report's gpu_timeline table; None when it has no total_time row."""
        if sheet is None or sheet.empty or "type" not in sheet:
            return None
        types = sheet["type"].astype(str)
        times = dict(zip(types, sheet["time ms"].astype(float), strict=True))
        if "total_time" not in times:
            return None
        pcts = dict(zip(types, sheet["percent"].astype(float), strict=True))
        return cls(time_ms=times, percent=pcts)

    @classmethod
    def from_manifest(cls, manifest: Manifest) -> Timeline:
        """The manifest's gpu_utilization (a row's time is percent x total / 100); it has no
        total communication or memcpy rows."""
        util = manifest.gpu_utilization
        total = float(util.total_time_ms)
        times, pcts = {"total_time": total}, {"total_time": 100.0}
        for row, percent in (
            ("computation_time", util.computation_time_percent),
            ("exposed_comm_time", util.exposed_comm_time_percent),
            ("exposed_memcpy_time", util.exposed_memcpy_time_percent),
            ("idle_time", util.idle_time_percent),
        ):
            pcts[row] = float(percent)
            times[row] = float(percent) * total / 100.0
        return cls(time_ms=times, percent=pcts)


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
