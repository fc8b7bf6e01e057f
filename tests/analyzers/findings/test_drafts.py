"""Drafted findings from hand-made metrics JSON: markers equal the metrics, files validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.findings.contract import Status, Tier, parse_findings, render_findings
from rooflens.analyzers.findings.drafts import draft_findings, findings_path, write_draft
from rooflens.analyzers.findings.validate import validate_findings


def op(name, time_ms, pct, eff, bound, args="(64,64) bf16"):
    efficiency = {
        "efficiency_percent": eff, "bound_type": bound, "flops_per_byte": 12.5,
        "compute_spec": "matrix_bf16", "resolved_peak_maf": 708.0, "resolved_peak_hbm_bw": 5.3,
    }  # fmt: skip
    return {
        "name": name, "count": 4, "time_ms": time_ms, "percent_of_total": pct,
        "efficiency": efficiency, "args": args, "library": "vendor GEMM",
        "launcher_path": "model.py(10): forward", "kernel_name_trunc": f"{name}_kernel",
        "module_chain": ["Net", "Block"],
    }  # fmt: skip


def member(name, time_ms, eff, method="quantified", bound="compute"):
    return {
        "operation": name, "time_ms": time_ms, "efficiency_pct": eff, "estimate_method": method,
        "bound_type": bound, "impact_score": 1.0, "impact_score_low": 0.5,
        "impact_score_high": 1.5,
    }  # fmt: skip


GEMM = {
    "category": "gemm", "status": "OK", "comparison_scope": "standalone",
    "total_time_ms": 20.0, "percent_of_compute": 40.0, "operation_count": 3,
    "operations": [
        op("aten::mm", 8.0, 16.0, 35.5, "compute"),
        op("aten::addmm", 4.4, 8.8, 42.0, "compute", args="(8,8) bf16<br>(8,8) bf16"),
        op("aten::_foo", 3.0, 6.0, None, None),
    ],
    "category_findings": [
        {
            "rank": 1, "bound_type": "compute", "library": "vendor GEMM", "eff_bucket": "30-60",
            "estimate_method": "quantified", "impact_score": 7.31, "impact_score_low": 6.27,
            "impact_score_high": 8.36, "member_count": 2,
            "members": [member("aten::mm", 8.0, 35.5), member("aten::addmm", 4.4, 42.0)],
        },
        {
            "rank": 2, "bound_type": "unmodeled", "library": "Unknown", "eff_bucket": "unknown",
            "estimate_method": "heuristic", "impact_score": 1.8, "impact_score_low": 0.9,
            "impact_score_high": 2.7, "percent_of_total": 6.0, "member_count": 1,
            "members": [member("aten::_foo", 3.0, None, "heuristic", None)],
        },
    ],
}  # fmt: skip
FUSION = {
    "category": "kernel_fusion", "status": "OK", "candidate_count": 3, "estimated_count": 2,
    "impact_estimates": [
        {"operation": "RMSNorm", "impact_score": 11.72, "impact_score_low": 10.04,
         "impact_score_high": 13.39, "estimation": "full", "bound_type": "memory",
         "time_ms": 4.789, "instance_count": 49, "kernel_count": 8, "modeled_kernel_count": 8,
         "confidence": "high", "affected_gpu_kernels": ["k_a", "k|b"],
         "fusion_type": "memory_bound"},
        {"operation": "MLP", "impact_score": 3.1, "impact_score_low": 2.66,
         "impact_score_high": 3.54, "estimation": "partial", "bound_type": "compute",
         "time_ms": 9.37, "instance_count": 24, "kernel_count": 5, "modeled_kernel_count": 3,
         "confidence": "low", "affected_gpu_kernels": [], "fusion_type": "matrix_compute"},
    ],
}  # fmt: skip
CPU_IDLE = {
    "status": "OK", "idle_flagged": True,
    "gpu_utilization": {"total_time_ms": 50.0, "idle_time_ms": 12.5, "idle_time_percent": 25.0,
                        "computation_percent": 75.0, "communication_percent": 0.0,
                        "memcpy_percent": 0.0},
    "impact_estimates": [],
}  # fmt: skip
MULTI_KERNEL = {
    "status": "SUCCESS", "total_time_ms": 50.0,
    "memcpy_assessment": {"flagged": True, "issues": [
        {"direction": "D2H", "count": 40, "time_ms": 3.2, "percent_of_total": 6.4,
         "avg_bytes": 1024.0, "description": "x"}]},
    "nccl_blocking_assessment": {"flagged": True, "exposed_comm_time_ms": 4.0,
                                 "total_comm_time_ms": 9.0, "exposed_percent_of_total": 8.0},
    "overlap_assessment": {"flagged": True, "overlap_ratio": 0.4, "overlap_percent": 40.0,
                           "target_percent": 70},
    "impact_estimates": [],
}  # fmt: skip


def run_with(tmp_path: Path, key: str, metrics: dict) -> Path:
    (tmp_path / "category_data").mkdir(exist_ok=True)
    (tmp_path / "category_data" / f"{key}_metrics.json").write_text(json.dumps(metrics))
    return tmp_path


def drafted(tmp_path, key, metrics):
    findings = draft_findings(run_with(tmp_path, key, metrics), key)
    text = render_findings(findings)
    assert validate_findings(text, findings.tier, metrics=metrics) == []
    assert parse_findings(text, findings.tier) == findings
    return findings, text


def attrs(marker):
    return {k: float(v) for k, v in marker.attrs}


def test_compute_cards_copy_the_metrics_numbers(tmp_path):
    findings, text = drafted(tmp_path, "gemm", GEMM)
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
    assert rows[0][:7] == ("aten::mm", "(64,64) bf16", "model.py(10): forward",
                           "aten::mm_kernel", "8.0", "16.0", "4")  # fmt: skip
    assert rows[0][8:] == ("35.50% of 708.0 TFLOPS", "compute-bound")
    assert rows[1][1] == "(8,8) bf16<br>(8,8) bf16"
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
def test_compute_nothing_to_report(tmp_path, metrics, status):
    findings, text = drafted(tmp_path, "gemm", metrics)
    assert findings.status == status and findings.nothing_to_report
    if status == Status.ERROR:
        assert "CSV missing" in text


def test_missing_metrics_is_an_error(tmp_path):
    findings = draft_findings(tmp_path, "gemm")
    assert findings.status == Status.ERROR
    assert validate_findings(render_findings(findings), Tier.COMPUTE) == []


def test_cpu_idle(tmp_path):
    findings, text = drafted(tmp_path, "cpu_idle", CPU_IDLE)
    assert findings.tier == Tier.SYSTEM and len(findings.cards) == 1
    assert findings.cards[0].impact.attrs == (("low", "null"), ("mid", "null"), ("high", "null"))
    assert "| Idle time | 12.5 ms (25.0%) | true |" in text
    quiet, _ = drafted(tmp_path, "cpu_idle", {**CPU_IDLE, "idle_flagged": False})
    assert quiet.status == Status.NO_FINDINGS


def test_multi_kernel_one_card_per_flagged_issue(tmp_path):
    findings, text = drafted(tmp_path, "multi_kernel", MULTI_KERNEL)
    assert len(findings.cards) == 3 == len(findings.details)
    assert "| D2H time | 3.2 ms (6.4%) | true |" in text
    assert "| Exposed communication | 4.0 ms (8.0%) | true |" in text
    assert "| Overlap ratio | 40.0% | true |" in text
    quiet = {k: {"flagged": False} if k.endswith("assessment") else v
             for k, v in MULTI_KERNEL.items()}  # fmt: skip
    assert drafted(tmp_path, "multi_kernel", quiet)[0].status == Status.NO_FINDINGS
    error = drafted(tmp_path, "multi_kernel", {"status": "ERROR", "error": "no data"})[0]
    assert error.status == Status.ERROR


def test_kernel_fusion(tmp_path):
    findings, text = drafted(tmp_path, "kernel_fusion", FUSION)
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
    assert drafted(tmp_path, "kernel_fusion", empty)[0].status == Status.NO_FINDINGS


def test_write_draft_places_files(tmp_path):
    run_with(tmp_path, "gemm", GEMM)
    run_with(tmp_path, "kernel_fusion", FUSION)
    path = write_draft(tmp_path, "gemm")
    assert path == tmp_path / "category_findings" / "gemm_findings.md"
    assert path.read_text(encoding="utf-8").startswith("# gemm findings")
    fusion = write_draft(tmp_path, "kernel_fusion")
    assert fusion == findings_path(tmp_path, "kernel_fusion")
    assert fusion.parent.name == "system_findings" and fusion.is_file()
