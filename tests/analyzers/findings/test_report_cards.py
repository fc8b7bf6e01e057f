"""Which card stands for which item: system cards by the part of the window they are about,
the rest after the ranked items, numbered on."""

from __future__ import annotations

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.multi_kernel import (
    MemcpyAssessment,
    MemcpyIssue,
    MultiKernelMetrics,
    NcclBlockingAssessment,
    OverlapAssessment,
)
from rooflens.analyzers.findings.composing.cards import (
    impact_text,
    ms,
    ms_range,
    placed_cards,
    system_pools,
)
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.analyzers.findings.ranking.impact_scale import Candidate, Saving, rank_items

ISSUE = MemcpyIssue(
    direction="HtoD", count=40, time_ms=3.0, percent_of_total=3.0, avg_bytes=4096.0,
    description="many small copies",
)  # fmt: skip
MULTI = MultiKernelMetrics(
    status="SUCCESS",
    memcpy_assessment=MemcpyAssessment(flagged=True, issues=[ISSUE]),
    nccl_blocking_assessment=NcclBlockingAssessment(
        flagged=True, exposed_comm_time_ms=8.0, exposed_percent_of_total=8.0
    ),
    overlap_assessment=OverlapAssessment(flagged=True, overlap_percent=40.0, target_percent=70),
    patterns_detected=[],
)


def _system(pool: str, mid: float) -> Candidate:
    saving = Saving(low_ms=mid / 2, mid_ms=mid, high_ms=mid * 1.5, cap_ms=mid * 2, pool=pool,
                    basis="b")  # fmt: skip
    category = "cpu_idle" if pool == "idle" else "multi_kernel"
    return Candidate(category=category, kind="system", title=f"{pool} item",
                     estimate_method="quantified", saving=saving)  # fmt: skip


def test_pools_follow_the_drafted_cards() -> None:
    drafted = draft_findings("multi_kernel", MULTI)
    assert [c.title for c in drafted.cards] == [
        "Host-device copies take 3.0 ms, 3.0% of the trace",
        "Exposed collective communication is 8.0% of the trace",
        "Communication overlaps compute for only 40.0% of its time",
    ]
    assert system_pools("multi_kernel", MULTI) == ["exposed_memcpy", "exposed_comm", "exposed_comm"]
    assert system_pools("cpu_idle", CpuIdleMetrics(status="OK", idle_flagged=False)) == []


def test_system_cards_claim_their_items_and_the_rest_follow() -> None:
    """The exposed-communication item (P1, 4 ms) takes the collective card; the idle item
    (P2, 2 ms) has no card (idle under the draft's threshold) and gets one from its numbers;
    the copy card (no item: under 1 % of the window) and the overlap card (same time as P1)
    come after, as P3 and P4."""
    items = rank_items([_system("idle", 2.0), _system("exposed_comm", 4.0)], 100.0)
    findings = {"multi_kernel": draft_findings("multi_kernel", MULTI)}
    metrics = {"multi_kernel": MULTI, "cpu_idle": CpuIdleMetrics(status="OK", idle_flagged=False)}
    placed = placed_cards(items, findings, metrics)
    got = [(p.number, p.key, p.card.title) for p in placed]
    assert got == [
        (1, "multi_kernel", "Exposed collective communication is 8.0% of the trace"),
        (2, "cpu_idle", "idle item"),
        (3, "multi_kernel", "Host-device copies take 3.0 ms, 3.0% of the trace"),
        (4, "multi_kernel", "Communication overlaps compute for only 40.0% of its time"),
    ]
    assert impact_text(placed[0]) == "2.00–6.00 ms (mid 4.00 ms, 4.00 % of the window)"
    assert impact_text(placed[2]) == "Not ranked: the exposed copy time is under 1 % of the window"
    assert impact_text(placed[3]) == "Counted in P1 (the exposed communication time it draws on)"


def test_milliseconds_keep_the_digits_of_the_range() -> None:
    assert (ms(0.0536), ms(3.214), ms(735.94)) == ("0.054", "3.21", "735.9")
    assert ms_range(0.75, 2.25) == "0.75–2.25"
    assert ms_range(0.0536, 0.16) == "0.054–0.160"
    assert ms_range(40.0, 160.0) == "40.0–160.0"
