"""`cpu_idle_metrics.json`: how much of the run the GPU sat idle (docs/analysis.md#cpu-idle).

`gpu_utilization` rounds times to 3 decimals and percents to 2; `idle_flagged` compares the
unrounded idle percent with IDLE_THRESHOLD_PERCENT (strictly greater). `kernel_analysis` is
written empty, as TraceLens's is on every real perf report (its ops_summary lacks the columns
it needs); nothing is estimated, so `impact_estimates` is always empty.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from rooflens.analyzers.categories.system_inputs import SystemInputs
from rooflens.analyzers.prepare.documents import OmitNone

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


class CpuIdleMetrics(OmitNone):
    """OK: status, idle_flagged, gpu_utilization, kernel_analysis, impact_estimates.
    ERROR: status, error."""

    status: Literal["OK", "ERROR"]
    error: str | None = None
    idle_flagged: bool | None = None
    gpu_utilization: GpuUtilizationSummary | None = None
    kernel_analysis: KernelAnalysis | None = None
    impact_estimates: list[dict[str, Any]] | None = None


def idle_flagged(idle_percent: float) -> bool:
    return idle_percent > IDLE_THRESHOLD_PERCENT


def analyze_cpu_idle(inputs: SystemInputs) -> CpuIdleMetrics:
    """The CPU/idle document of a run; an ERROR document when it has no GPU time at all."""
    timeline = inputs.any_timeline()
    if timeline.total_ms <= 0:
        return CpuIdleMetrics(status="ERROR", error="the run has no GPU time (total_time is 0)")
    pct = timeline.percent
    total = timeline.total_ms
    idle_pct = pct.get("idle_time", 0.0)
    idle_ms = timeline.time_ms.get("idle_time", 0.0)
    util = GpuUtilizationSummary(
        total_time_ms=round(total, 3),
        idle_time_ms=round(idle_ms, 3),
        idle_time_percent=round(idle_pct, 2),
        computation_percent=round(pct.get("computation_time", 0.0), 2),
        communication_percent=round(pct.get("exposed_comm_time", 0.0), 2),
        memcpy_percent=round(pct.get("exposed_memcpy_time", 0.0), 2),
    )
    return CpuIdleMetrics(
        status="OK",
        idle_flagged=idle_flagged(idle_pct),
        gpu_utilization=util,
        kernel_analysis=KernelAnalysis(),
        impact_estimates=[],
    )
