"""`multi_kernel_metrics.json`: copies, collectives and their overlap.

See docs/analysis.md#multi-kernel.

Reads `category_data/multi_kernel_data.json` and the GPU timeline for its total (the perf
report's gpu_timeline, else the manifest's gpu_utilization). Rules, all on unrounded values:

* memcpy: per direction D2H and H2D only, an issue when its time > MEMCPY_PERCENT_LIMIT % of
  the total **or** its count > MEMCPY_COUNT_LIMIT;
* communication blocking: flagged when `comm_percent_of_total` > COMM_EXPOSED_PERCENT_LIMIT
  (no communication at all -> not flagged, with `details`);
* overlap: flagged when `comm_overlap_ratio` < OVERLAP_TARGET_RATIO, judged only when the
  ratio is known and the communication lasts at least OVERLAP_MIN_COMM_US;
* cross-validation: each multi_kernel_data time against its gpu_timeline row, WARN when the
  difference exceeds CROSS_VALIDATION_TOLERANCE_PERCENT of the larger one.

Output rounding follows TraceLens: ms to 3 decimals, percents to 2. The top-level status is
"SUCCESS" (not "OK"), and `impact_estimates` is always empty. `copies` (ours) holds each group
of copies judged against its link and their saving (categories/copies.py,
docs/analysis.md#copies); `collectives` (ours) each collective type with the call sites that
issue it, its count per steady iteration, its median and its exposed time
(prepare/collective_table.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, SerializerFunctionWrapHandler, field_validator, model_serializer

from ..prepare.collective_table import CollectiveGroup
from ..prepare.document_base import OmitNone
from ..prepare.multi_kernel import (
    DirectionSummary,
    MemcpySummary,
    NcclSummary,
    OverlapAnalysis,
    TopOp,
)
from .copies import CopyAnalysis, analyze_copies
from .system_inputs import SystemInputs, Timeline

MEMCPY_DIRECTIONS = ("D2H", "H2D")
MEMCPY_PERCENT_LIMIT = 5.0
MEMCPY_COUNT_LIMIT = 10
COMM_EXPOSED_PERCENT_LIMIT = 5.0
OVERLAP_TARGET_RATIO = 0.70
OVERLAP_TARGET_PERCENT = 70
OVERLAP_MIN_COMM_US = 100.0
CROSS_VALIDATION_TOLERANCE_PERCENT = 2.0

NO_COMM = "No communication events detected"
NO_OVERLAP_DATA = "Insufficient communication data for overlap analysis"
NO_TOTAL = "No GPU total time available for the memcpy assessment"

# (metric, overlap_analysis key, gpu_timeline row)
CROSS_CHECKS = (
    ("Computation time", "computation_time_us", "computation_time"),
    ("Exposed communication time", "exposed_comm_time_us", "exposed_comm_time"),
    ("Exposed memcpy time", "exposed_memcpy_time_us", "exposed_memcpy_time"),
    ("Total GPU time", "total_time_us", "total_time"),
)


class MemcpyIssue(BaseModel):
    direction: str
    count: int
    time_ms: float
    percent_of_total: float
    avg_bytes: float
    description: str


class MemcpyAssessment(OmitNone):
    flagged: bool
    details: str | None = None
    total_count: int | None = None
    total_time_ms: float | None = None
    percent_of_total: float | None = None
    issues: list[MemcpyIssue] | None = None


class NcclBlockingAssessment(OmitNone):
    flagged: bool
    details: str | None = None
    exposed_comm_time_ms: float | None = None
    total_comm_time_ms: float | None = None
    exposed_percent_of_total: float | None = None
    description: str | None = None


class OverlapAssessment(OmitNone):
    flagged: bool
    details: str | None = None
    overlap_ratio: float | None = None
    overlap_percent: float | None = None
    target_percent: int | None = None
    description: str | None = None


class Pattern(BaseModel):
    pattern: str
    description: str


class CrossCheck(OmitNone):
    """Compared: metric, mk_ms, tl_ms, diff_ms, diff_pct, status. Both zero: no diff_pct.
    Skipped (a side is missing): metric, status SKIP, reason."""

    metric: str
    status: Literal["PASS", "WARN", "SKIP"]
    mk_ms: float | None = None
    tl_ms: float | None = None
    diff_ms: float | None = None
    diff_pct: float | None = None
    reason: str | None = None


class CrossValidation(BaseModel):
    status: Literal["PASS", "WARN"]
    checks: list[CrossCheck]
    warnings: list[str]


class MemcpySummaryOut(BaseModel):
    total_count: int
    total_time_ms: float
    by_direction: dict[str, DirectionSummary]


class NcclSummaryOut(BaseModel):
    total_count: int
    total_time_ms: float
    top_ops: list[TopOp]


class MultiKernelMetrics(OmitNone):
    """SUCCESS: every field but `error`. ERROR: status, error, the three assessments
    (`flagged: false` only) and an empty `patterns_detected`."""

    status: Literal["SUCCESS", "ERROR"]
    error: str | None = None
    total_time_ms: float | None = None
    memcpy_summary: MemcpySummaryOut | None = None
    nccl_summary: NcclSummaryOut | None = None
    overlap_analysis: OverlapAnalysis | None = None  # SUCCESS without GPU events: written {}
    memcpy_assessment: MemcpyAssessment
    nccl_blocking_assessment: NcclBlockingAssessment
    overlap_assessment: OverlapAssessment
    patterns_detected: list[Pattern]
    cross_validation: CrossValidation | None = None
    impact_estimates: list[dict[str, Any]] | None = None
    copies: CopyAnalysis | None = None  # each group of copies against its link (ours)
    collectives: list[CollectiveGroup] | None = None  # each collective type, its source (ours)

    @field_validator("overlap_analysis", mode="before")
    @classmethod
    def _empty_overlap(cls, value: Any) -> Any:
        return None if value == {} else value  # read back what the serializer writes

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if self.status == "SUCCESS" and self.overlap_analysis is None:
            data["overlap_analysis"] = {}
        return {k: v for k, v in data.items() if v is not None}


def error_document(message: str) -> MultiKernelMetrics:
    return MultiKernelMetrics(
        status="ERROR",
        error=message,
        memcpy_assessment=MemcpyAssessment(flagged=False),
        nccl_blocking_assessment=NcclBlockingAssessment(flagged=False),
        overlap_assessment=OverlapAssessment(flagged=False),
        patterns_detected=[],
    )


def _percent(part: float, total: float) -> float:
    return part / total * 100.0 if total > 0 else 0.0


def assess_memcpy(memcpy: MemcpySummary, total_ms: float) -> MemcpyAssessment:
    if total_ms <= 0:
        return MemcpyAssessment(flagged=False, details=NO_TOTAL)
    issues = []
    for direction in MEMCPY_DIRECTIONS:
        if direction not in memcpy.by_direction:  # a direction without copies has no entry
            continue
        stats = memcpy.by_direction[direction]
        count, time_ms = stats.count, stats.total_time_us / 1000.0
        pct = _percent(time_ms, total_ms)
        if pct > MEMCPY_PERCENT_LIMIT or count > MEMCPY_COUNT_LIMIT:
            issues.append(
                MemcpyIssue(
                    direction=direction,
                    count=count,
                    time_ms=round(time_ms, 3),
                    percent_of_total=round(pct, 2),
                    avg_bytes=stats.avg_bytes,
                    description=(
                        f"{direction} memcpy: {count} transfers, {time_ms:.3f}ms "
                        f"({pct:.2f}% of total)"
                    ),
                )
            )
    total_memcpy_ms = memcpy.total_time_us / 1000.0
    return MemcpyAssessment(
        flagged=bool(issues),
        total_count=memcpy.total_count,
        total_time_ms=round(total_memcpy_ms, 3),
        percent_of_total=round(_percent(total_memcpy_ms, total_ms), 2),
        issues=issues,
    )


def _has_comm(nccl: NcclSummary, overlap: OverlapAnalysis | None) -> bool:
    return (overlap is not None and overlap.total_comm_time_us > 0) or nccl.total_count > 0


def assess_nccl_blocking(
    nccl: NcclSummary, overlap: OverlapAnalysis | None
) -> NcclBlockingAssessment:
    if not _has_comm(nccl, overlap):
        return NcclBlockingAssessment(flagged=False, details=NO_COMM)
    pct = overlap.comm_percent_of_total if overlap is not None else 0.0
    exposed_us = overlap.exposed_comm_time_us if overlap is not None else 0.0
    total_us = overlap.total_comm_time_us if overlap is not None else 0.0
    return NcclBlockingAssessment(
        flagged=pct > COMM_EXPOSED_PERCENT_LIMIT,
        exposed_comm_time_ms=round(exposed_us / 1000.0, 3),
        total_comm_time_ms=round(total_us / 1000.0, 3),
        exposed_percent_of_total=pct,
        description=f"Exposed (non-overlapped) communication: {pct:.1f}% of total GPU time",
    )


def assess_overlap(overlap: OverlapAnalysis | None) -> OverlapAssessment:
    ratio = overlap.comm_overlap_ratio if overlap is not None else None
    if overlap is None or ratio is None or overlap.total_comm_time_us < OVERLAP_MIN_COMM_US:
        return OverlapAssessment(flagged=False, details=NO_OVERLAP_DATA)
    return OverlapAssessment(
        flagged=ratio < OVERLAP_TARGET_RATIO,
        overlap_ratio=ratio,
        overlap_percent=round(ratio * 100.0, 2),
        target_percent=OVERLAP_TARGET_PERCENT,
        description=(
            f"Compute/communication overlap: {ratio * 100.0:.1f}% "
            f"(target > {OVERLAP_TARGET_PERCENT}%)"
        ),
    )


def cross_check(metric: str, mk_us: float | None, tl_ms: float | None) -> CrossCheck:
    if mk_us is None or tl_ms is None:
        side = "multi_kernel_data" if mk_us is None else "gpu_timeline"
        return CrossCheck(metric=metric, status="SKIP", reason=f"no {side} value")
    mk_ms = mk_us / 1000.0
    if mk_ms == 0 and tl_ms == 0:
        return CrossCheck(metric=metric, status="PASS", mk_ms=0, tl_ms=0, diff_ms=0)
    diff = abs(mk_ms - tl_ms)
    pct = diff / max(abs(mk_ms), abs(tl_ms)) * 100.0
    return CrossCheck(
        metric=metric,
        status="PASS" if pct <= CROSS_VALIDATION_TOLERANCE_PERCENT else "WARN",
        mk_ms=round(mk_ms, 3),
        tl_ms=round(tl_ms, 3),
        diff_ms=round(diff, 3),
        diff_pct=round(pct, 2),
    )


def cross_validate(overlap: OverlapAnalysis | None, timeline: Timeline) -> CrossValidation:
    checks = []
    warnings = []
    for metric, key, row in CROSS_CHECKS:
        tl_row = getattr(timeline, row)  # None: the timeline has no such row
        tl_ms = tl_row.time_ms if tl_row is not None else None
        mk_us = getattr(overlap, key) if overlap is not None else None
        check = cross_check(metric, mk_us, tl_ms)
        checks.append(check)
        if check.status == "WARN" and mk_us is not None and tl_ms is not None:
            warnings.append(
                f"{metric}: multi_kernel_data={mk_us / 1000.0:.3f}ms vs gpu_timeline="
                f"{tl_ms:.3f}ms (diff {check.diff_pct:.1f}%)"
            )
    return CrossValidation(status="WARN" if warnings else "PASS", checks=checks, warnings=warnings)


def analyze_multi_kernel(inputs: SystemInputs) -> MultiKernelMetrics:
    """The multi-kernel document of a run; an ERROR document when it has no copy or
    collective data."""
    if inputs.multi_kernel is None:
        return error_document("the run has no multi-kernel data; prepare its category data first")
    data = inputs.multi_kernel
    if data.error:
        return error_document(f"the multi-kernel data reports an error: {data.error}")
    memcpy, nccl, overlap = data.memcpy_summary, data.nccl_summary, data.overlap_analysis
    timeline = inputs.any_timeline()
    total_ms = timeline.total_ms
    memcpy_assessment = assess_memcpy(memcpy, total_ms)
    nccl_assessment = assess_nccl_blocking(nccl, overlap)
    overlap_assessment = assess_overlap(overlap)
    patterns = [
        Pattern(pattern=f"high_{issue.direction.lower()}_memcpy", description=issue.description)
        for issue in memcpy_assessment.issues or []
    ]
    if nccl_assessment.flagged:
        patterns.append(
            Pattern(pattern="nccl_blocking_compute", description=nccl_assessment.description or "")
        )
    if overlap_assessment.flagged:
        patterns.append(
            Pattern(
                pattern="poor_comm_compute_overlap",
                description=overlap_assessment.description or "",
            )
        )
    return MultiKernelMetrics(
        status="SUCCESS",
        total_time_ms=round(total_ms, 3),
        memcpy_summary=MemcpySummaryOut(
            total_count=memcpy.total_count,
            total_time_ms=round(memcpy.total_time_us / 1000.0, 3),
            by_direction=dict(memcpy.by_direction),
        ),
        nccl_summary=NcclSummaryOut(
            total_count=nccl.total_count,
            total_time_ms=round(nccl.total_time_us / 1000.0, 3),
            top_ops=nccl.top_ops or [],
        ),
        overlap_analysis=overlap,
        memcpy_assessment=memcpy_assessment,
        nccl_blocking_assessment=nccl_assessment,
        overlap_assessment=overlap_assessment,
        patterns_detected=patterns,
        cross_validation=cross_validate(overlap, timeline),
        impact_estimates=[],
        copies=analyze_copies(inputs.copies, inputs.platform) if inputs.copies else None,
        collectives=inputs.copies.collectives if inputs.copies else None,
    )
