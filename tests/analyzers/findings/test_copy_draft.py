"""The multi-kernel draft's one copy card (docs/analysis.md#drafts): all directions in one
card, judged against the link, with copy fixes, drafted whenever the copies are worth an item."""

from __future__ import annotations

from rooflens.analyzers.categories.copies import analyze_copies
from rooflens.analyzers.categories.multi_kernel import (
    MemcpyAssessment,
    MultiKernelMetrics,
    NcclBlockingAssessment,
    OverlapAssessment,
)
from rooflens.analyzers.findings.composing.cards import system_pools
from rooflens.analyzers.findings.contract.contract import Status, parse_findings, render_findings
from rooflens.analyzers.findings.contract.validate import validate_findings
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.copies import CopyData, CopyGroup, MemsetSummary
from rooflens.analyzers.prepare.multi_kernel import OverlapAnalysis


def _group(name: str, route: str, memory: str, time_us: float, nbytes: int) -> CopyGroup:
    return CopyGroup(
        name=name, route=route, host_memory=memory, count=2, time_us=time_us, bytes=nbytes,
        with_bytes=2, exposed_us=time_us, launchers=[],
    )  # fmt: skip


def metrics(total_ms: float, *, flagged: bool) -> MultiKernelMetrics:
    """1.5 ms of copies: a pageable D2H of 8 MB in 1 ms (8 GB/s) and a pinned H2D of 12 MB
    in 0.5 ms (24 GB/s), both exposed, on an H100 (64 GB/s PCIe 5.0 link)."""
    data = CopyData(
        groups=[
            _group("Memcpy DtoH (Device -> Pageable)", "D2H", "pageable", 1000.0, 8_000_000),
            _group("Memcpy HtoD (Pinned -> Device)", "H2D", "pinned", 500.0, 12_000_000),
        ],
        memsets=MemsetSummary(count=0, time_us=0.0, bytes=0),
        time_us=1500.0,
        exposed_us=1500.0,
    )
    return MultiKernelMetrics(
        status="SUCCESS",
        total_time_ms=total_ms,
        memcpy_assessment=MemcpyAssessment(flagged=flagged, issues=[]),
        nccl_blocking_assessment=NcclBlockingAssessment(flagged=False),
        overlap_assessment=OverlapAssessment(flagged=False),
        patterns_detected=[],
        copies=analyze_copies(data, get_platform("H100")),
    )


def test_one_card_for_every_direction_with_the_link_and_copy_fixes() -> None:
    analysed = metrics(100.0, flagged=False)  # 1.5 % of the window: worth an item
    findings = draft_findings("multi_kernel", analysed)
    text = render_findings(findings)
    assert validate_findings(text, findings.tier, metrics=analysed.model_dump(mode="json")) == []
    assert parse_findings(text, findings.tier) == findings
    (card,) = findings.cards
    assert card.title == "Copies take 1.5 ms (1.50% of the trace), 1.5 ms exposed"
    assert "12.5% of the `PCIe 5.0 x16` link" in text and "37.5% of the `PCIe 5.0 x16` link" in text
    assert "| `Memcpy DtoH (Device -> Pageable)` bandwidth | 8.0 GB/s, 12.5% of the `PCIe" in text
    assert "Pin the host buffer" in text and "non_blocking=True" in text
    assert "fuse" not in text.lower()
    assert system_pools("multi_kernel", analysed) == ["exposed_memcpy"]


def test_no_card_when_the_copies_are_worth_no_item_and_nothing_is_flagged() -> None:
    quiet = metrics(1000.0, flagged=False)  # 0.15 % of the window
    assert draft_findings("multi_kernel", quiet).status == Status.NO_FINDINGS
    assert system_pools("multi_kernel", quiet) == []


def test_comparative_copy_card_adds_trace2s_exposed_copies() -> None:
    """Trace 2's document of the same analysis (docs/compare.md#system-analyses-of-both-traces):
    0.4 ms of exposed copies in an 80 ms window is 0.50 % of it."""
    analysed = metrics(100.0, flagged=False)
    trace2 = metrics(80.0, flagged=False).model_copy(
        update={
            "overlap_analysis": OverlapAnalysis(
                total_time_us=80_000.0,
                computation_time_us=79_600.0,
                total_comm_time_us=0.0,
                exposed_comm_time_us=0.0,
                total_memcpy_time_us=400.0,
                exposed_memcpy_time_us=400.0,
                comm_overlap_ratio=None,
                memcpy_overlap_ratio=0.0,
                comm_percent_of_total=0.0,
                memcpy_percent_of_total=0.5,
            )
        }
    )
    findings = draft_findings("multi_kernel", analysed, trace2=trace2)
    text = render_findings(findings)
    assert validate_findings(text, findings.tier, metrics=analysed.model_dump(mode="json")) == []
    (card,) = findings.cards
    assert dict(card.fields)["Insight"].endswith(
        " Trace 2: 0.400 ms of exposed copies (0.50% of its window)."
    )
    alone = draft_findings("multi_kernel", analysed)
    assert "Trace 2" not in render_findings(alone)
