"""The job analysis as a small JSON-ready document, for a tool result or a job record:
who is late and why, what it costs, the spread of compute, the findings
(docs/multirank.md#the-job-overview). Tables stay in the JobAnalysis and the report.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .analysis import JobAnalysis
from .stragglers import RankWaits


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StragglerView(_Frozen):
    rank: int
    times_last: int = Field(description="collectives it arrived last at")
    collectives: int = Field(description="matched collectives it took part in")
    pct_last: float
    total_wait_ms: float = Field(description="its own wait at collectives")
    held_others_ms: float = Field(description="what the others waited for it alone, in all")
    held_others_per_step_ms: float = Field(description="the same per step (or profiled window)")


class WaiterView(_Frozen):
    rank: int
    total_wait_ms: float
    mean_wait_ms: float


class CauseView(_Frozen):
    kind: str = Field(description="compute, slow_op, host_idle or late_data")
    label: str
    straggler_ms: float
    median_ms: float = Field(description="median over the other ranks")
    excess_ms: float


class ImbalanceView(_Frozen):
    median_compute_ms: float
    max_compute_ms: float
    max_rank: int
    max_over_median: float
    cv: float = Field(description="coefficient of variation of compute over ranks")


class FindingView(_Frozen):
    p_number: int
    title: str
    low_ms: float
    mid_ms: float
    high_ms: float
    percent_mid: float = Field(description="% of the median rank's step (or window)")
    basis: str


class FailureView(_Frozen):
    rank: int | None
    path: str
    reason: str


class JobOverview(_Frozen):
    """The job analysis in brief; times in ms, per step where the name says so."""

    ranks: list[int]
    world_size: int | None
    missing: list[int]
    failures: list[FailureView]
    platform: str | None
    steps: int = Field(description="profiler steps per rank; 0: savings per profiled window")
    per: str
    matched_collectives: int
    straggler: StragglerView | None
    longest_waiter: WaiterView | None
    causes: list[CauseView]
    imbalance: ImbalanceView
    slowest_rank: int
    collectives_with_bandwidth: int
    findings: list[FindingView]
    outside_collectives: int = Field(
        0, description="collectives whose group holds ranks with no trace here"
    )
    outside_wait_ms: float | None = Field(
        None,
        description="per step (or window): the last traced rank's time in those collectives "
        "beyond each one's fastest instance, a wait for an untraced rank; null when none, or "
        "when every instance takes the same time (wait and transfer cannot be told apart)",
    )


def job_overview(a: JobAnalysis) -> JobOverview:
    """The overview of one job analysis (every figure taken from it, in ms)."""
    late, waiter, i = a.straggler, a.longest_waiter, a.imbalance
    per_step = 1e3 * (a.steps or 1)
    return JobOverview(
        ranks=list(a.ranks),
        world_size=a.world_size,
        missing=list(a.missing),
        failures=[FailureView(rank=f.rank, path=f.path, reason=f.reason) for f in a.failures],
        platform=a.platform,
        steps=a.steps,
        per=a.per,
        matched_collectives=len(a.collectives.collectives),
        straggler=None if late is None else _straggler(late, per_step),
        longest_waiter=None
        if waiter is None
        else WaiterView(
            rank=waiter.rank,
            total_wait_ms=waiter.total_wait_us / 1e3,
            mean_wait_ms=waiter.mean_wait_us / 1e3,
        ),
        causes=[
            CauseView(
                kind=c.kind,
                label=c.label,
                straggler_ms=c.straggler_us / 1e3,
                median_ms=c.median_us / 1e3,
                excess_ms=c.excess_us / 1e3,
            )
            for c in a.causes
        ],
        imbalance=ImbalanceView(
            median_compute_ms=i.median_us / 1e3,
            max_compute_ms=i.max_us / 1e3,
            max_rank=i.max_rank,
            max_over_median=i.max_over_median,
            cv=i.cv,
        ),
        slowest_rank=a.slowest_rank,
        collectives_with_bandwidth=len(a.bandwidth),
        outside_collectives=a.outside.collectives if a.outside else 0,
        outside_wait_ms=a.outside.wait_us / per_step if a.outside and a.outside.split else None,
        findings=[
            FindingView(
                p_number=f.p_number,
                title=f.title,
                low_ms=f.saving.low_ms,
                mid_ms=f.saving.mid_ms,
                high_ms=f.saving.high_ms,
                percent_mid=f.percent_mid or 0.0,
                basis=f.saving.basis,
            )
            for f in a.findings
            if f.saving is not None
        ],
    )


def _straggler(late: RankWaits, per_step: float) -> StragglerView:
    return StragglerView(
        rank=late.rank,
        times_last=late.times_last,
        collectives=late.collectives,
        pct_last=late.pct_last,
        total_wait_ms=late.total_wait_us / 1e3,
        held_others_ms=late.held_others_us / 1e3,
        held_others_per_step_ms=late.held_others_us / per_step,
    )
