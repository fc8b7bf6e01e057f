"""Drafted findings from hand-made metrics: markers equal the metrics, files validate."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.any_metrics import metrics_document
from rooflens.analyzers.categories.multi_kernel import error_document
from rooflens.analyzers.findings.contract.contract import (
    Status,
    Tier,
    parse_findings,
    render_findings,
)
from rooflens.analyzers.findings.contract.validate import validate_findings
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.analyzers.pipeline.folder import RunFolder
from tests.helpers.sample_metrics import CPU_IDLE, FUSION, GEMM, MULTI_KERNEL, typed


def drafted(key, metrics):
    analysed = typed(key, metrics) if isinstance(metrics, dict) else metrics
    findings = draft_findings(key, analysed)
    text = render_findings(findings)
    assert validate_findings(text, findings.tier, metrics=metrics_document(analysed)) == []
    assert parse_findings(text, findings.tier) == findings
    return findings, text


def attrs(marker):
    return {k: float(v) for k, v in marker.attrs}


def test_compute_cards_copy_the_metrics_numbers():
    findings, text = drafted("gemm", GEMM)
    assert findings.tier == Tier.COMPUTE and findings.status == Status.SUCCESS
    assert [c.number for c in findings.cards] == [1, 2]
    for card, block, f in zip(
        findings.cards, findings.details, GEMM["category_findings"], strict=True
    ):
        want = (f["impact_score_low"], f["impact_score"], f["impact_score_high"])
        assert attrs(card.impact) == dict(zip(("low", "mid", "high"), want, strict=True))
        assert card.impact_text == f"impact_score: {f['impact_score']}"
        est = block.section("Impact estimate").marker
        assert attrs(est) == {"low": f["impact_score_low"], "high": f["impact_score_high"]}
        assert block.rank == f["rank"] and block.tier == "compute"
    quantified, heuristic = findings.cards
    assert quantified.library == "vendor GEMM" and heuristic.library is None
    assert "2 operations (12.4 ms) run at 30-60 % of the matrix_bf16 roofline" in text
    assert "Warning" not in heuristic.trailer and "6.0%" in heuristic.trailer
    rows = findings.details[0].section("Data").tables[0].rows
    # names from the trace are code spans; the shapes of each input one span per <br> part
    assert rows[0][:7] == ("`aten::mm`", "`(64,64) bf16`", "`model.py(10): forward`",
                           "`aten::mm_kernel`", "8.0", "16.0", "4")  # fmt: skip
    assert rows[0][8:] == ("35.50% of 708.0 TFLOPS", "compute-bound")
    assert rows[1][1] == "`(8,8) bf16`<br>`(8,8) bf16`"
    heur_row = findings.details[1].section("Data").tables[0].rows[0]
    assert heur_row[8:] == ("—", "—")


@pytest.mark.parametrize(
    ("metrics", "status"),
    [
        ({**GEMM, "category_findings": []}, Status.NO_FINDINGS),
        ({"category": "moe", "status": "NO_DATA", "message": "no MoE ops"}, Status.NO_FINDINGS),
        ({"category": "gemm", "status": "ERROR", "error": "CSV missing"}, Status.ERROR),
    ],
)
def test_compute_nothing_to_report(metrics, status):
    findings, text = drafted("gemm", metrics)
    assert findings.status == status and findings.nothing_to_report
    if status == Status.ERROR:
        assert "CSV missing" in text


def test_cpu_idle():
    findings, text = drafted("cpu_idle", CPU_IDLE)
    assert findings.tier == Tier.SYSTEM and len(findings.cards) == 1
    assert findings.cards[0].impact.attrs == (("low", "null"), ("mid", "null"), ("high", "null"))
    assert "| Idle time | 12.5 ms (25.0%) | true |" in text
    quiet, _ = drafted("cpu_idle", {**CPU_IDLE, "idle_flagged": False})
    assert quiet.status == Status.NO_FINDINGS


def test_multi_kernel_one_card_per_flagged_issue():
    findings, text = drafted("multi_kernel", MULTI_KERNEL)
    assert len(findings.cards) == 3 == len(findings.details)
    assert "| D2H time | 3.2 ms (6.4%) | true |" in text
    assert "| Exposed communication | 4.0 ms (8.0%) | true |" in text
    assert "| Overlap ratio | 40.0% | true |" in text
    quiet = {k: {"flagged": False} if k.endswith("assessment") else v
             for k, v in MULTI_KERNEL.items()}  # fmt: skip
    assert drafted("multi_kernel", quiet)[0].status == Status.NO_FINDINGS
    error = drafted("multi_kernel", error_document("no data"))[0]
    assert error.status == Status.ERROR


def test_kernel_fusion():
    findings, text = drafted("kernel_fusion", FUSION)
    assert findings.tier == Tier.FUSION
    first, second = findings.cards
    assert (first.icon, first.suffix) == ("🔴", "4.789 ms, 49 instances")
    assert second.icon == "🟢"
    assert first.impact_text == "impact_score: 11.72 (perf-model coverage 8/8 kernels)"
    assert attrs(first.impact) == {"low": 10.04, "mid": 11.72, "high": 13.39}
    assert attrs(findings.details[1].section("Impact estimate").marker) == {
        "low": 2.66, "high": 3.54}  # fmt: skip
    assert "k\\|b" in text
    empty = {"category": "kernel_fusion", "status": "NO_DATA", "candidate_count": 0}
    assert drafted("kernel_fusion", empty)[0].status == Status.NO_FINDINGS


def test_written_drafts_land_in_the_layout_and_read_back(tmp_path: Path):
    folder = RunFolder(tmp_path)
    gemm = draft_findings("gemm", typed("gemm", GEMM))
    path = folder.write_findings("gemm", gemm)
    assert (
        path
        == tmp_path / "category_findings" / "gemm_findings.md"
        == tmp_path / layout.findings("gemm")
    )
    assert path.read_text(encoding="utf-8").startswith("# `gemm` findings")
    fusion_draft = draft_findings("kernel_fusion", typed("kernel_fusion", FUSION))
    fusion = folder.write_findings("kernel_fusion", fusion_draft)
    assert fusion == tmp_path / layout.findings("kernel_fusion")
    assert fusion.parent.name == "system_findings" and fusion.is_file()
    assert folder.read_findings("gemm") == gemm
