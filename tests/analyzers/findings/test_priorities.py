"""priority_data on hand-made manifests and metrics; the written document on RunFolder."""

from __future__ import annotations

import json
from pathlib import Path

from rooflens.analyzers import layout
from rooflens.analyzers.categories.any_metrics import Metrics
from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.kernel_fusion import FusionEstimate, KernelFusionMetrics
from rooflens.analyzers.categories.models import (
    CategoryMetrics,
    Finding,
    ImpactEstimate,
    error_metrics,
    no_data_metrics,
)
from rooflens.analyzers.categories.multi_kernel import error_document
from rooflens.analyzers.findings.ranking.priorities import priority_data
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.manifest import CategoryEntry, Manifest
from tests.helpers.pipeline_runs import entry, manifest

# computation time = 100 ms × 50 % = 50 ms ⇒ fallback threshold 2.5 ms
GPU = {"total_time_ms": 100.0, "computation_time_percent": 50.0, "idle_time_percent": 50.0}


def run_manifest(categories: list[CategoryEntry]) -> Manifest:
    return manifest(GPU, categories)


def compute(name: str, time_ms: float, display: str | None = None) -> CategoryEntry:
    return entry(name, "compute_kernel", time_ms, display)


def estimate(op: str, mid: float, method: str = "quantified") -> ImpactEstimate:
    quantified = method == "quantified"
    return ImpactEstimate(
        operation=op,
        category="x",
        type="kernel_tuning" if quantified else "unmodeled_significant",
        estimate_method=method,  # type: ignore[arg-type]
        impact_score=mid,
        impact_score_low=round(mid * 0.75, 2),
        impact_score_high=round(mid * 1.25, 2),
        efficiency_pct=20.0 if quantified else None,
        bound_type="memory" if quantified else None,
        library=None,
        time_ms=1.0,
        percent_of_total=None if quantified else round(mid / 0.3, 2),
    )


def finding(mid: float, rank: int = 1, method: str = "quantified", members: int = 1) -> Finding:
    heuristic = method == "heuristic"
    return Finding(
        rank=rank,
        bound_type="unmodeled" if heuristic else "memory",
        library="Unknown",
        eff_bucket="unknown" if heuristic else "0-30",
        estimate_method=method,  # type: ignore[arg-type]
        impact_score=mid,
        impact_score_low=round(mid * 0.75, 2),
        impact_score_high=round(mid * 1.25, 2),
        percent_of_total=round(mid / 0.3, 2) if heuristic else None,
        member_count=members,
        members=(estimate("op", mid / members, method),) * members,
    )


def ok(category: str, findings: list[Finding], estimates: list[ImpactEstimate] | None = None):
    return CategoryMetrics(
        category=category,
        status="OK",
        impact_estimates=tuple(estimates or ()),
        category_findings=tuple(findings),
    )


def fusion_estimate(op: str, mid: float) -> FusionEstimate:
    return FusionEstimate(
        operation=op,
        impact_score=mid,
        impact_score_low=round(mid * 0.75, 2),
        impact_score_high=round(mid * 1.25, 2),
        estimation="full",
        bound_type="memory",
        time_ms=1.0,
        instance_count=1,
        kernel_count=2,
        modeled_kernel_count=2,
        confidence="medium",
        affected_gpu_kernels=["k1", "k2"],
        fusion_type="memory_bound",
    )


def test_estimates_and_findings_in_filename_order() -> None:
    idle = {"operation": "idle", "estimate_method": "quantified", "impact_score": 0.1}
    metrics: dict[str, Metrics] = {
        "sdpa": ok("sdpa", [finding(2.0)], [estimate("s", 2.0)]),
        "gemm": ok("gemm", [finding(3.0), finding(2.0, 2)], [estimate("g", 3.0)]),
        "kernel_fusion": KernelFusionMetrics(
            status="OK", impact_estimates=[fusion_estimate("f", 9.0)]
        ),
        "cpu_idle": CpuIdleMetrics(status="OK", impact_estimates=[idle]),
    }
    data = priority_data(run_manifest([compute("gemm", 1.0), compute("sdpa", 1.0)]), metrics)
    assert data.baseline_ms == 100.0
    assert [e["operation"] for e in data.tracelens_compute.all_estimates] == ["idle", "g", "f", "s"]
    got = [
        (f.category, f.category_rank, f.global_rank, f.impact_score)
        for f in data.tracelens_compute.findings
    ]
    # ties keep the filename order: gemm's second finding before sdpa's
    assert got == [("gemm", 1, 1, 3.0), ("gemm", 2, 2, 2.0), ("sdpa", 1, 3, 2.0)]
    assert data.failed_categories == []


def test_finding_dump_renames_rank_and_keeps_key_order() -> None:
    other = ok("other", [finding(1.5, method="heuristic"), finding(0.9, 2)])
    data = priority_data(run_manifest([compute("other", 1.0)]), {"other": other})
    dumped = data.model_dump(mode="json")["tracelens_compute"]["findings"]
    heuristic, quantified = dumped
    assert list(heuristic)[-4:] == ["members", "category", "category_rank", "global_rank"]
    assert "rank" not in heuristic
    assert heuristic["percent_of_total"] == 5.0
    assert "percent_of_total" not in quantified
    assert list(quantified)[:3] == ["bound_type", "library", "eff_bucket"]


def test_rollup_sums_quantified_only_and_caps() -> None:
    names = [f"c{i}" for i in range(8)]
    the_manifest = run_manifest([compute(n, 10.0, n.upper()) for n in names])
    metrics: dict[str, Metrics] = {}
    for i, name in enumerate(names):
        rows = [finding(1.0 + i, members=2), finding(0.11, 2, members=3)]
        rows.append(finding(50.0, 3, method="heuristic"))  # mixed: not in the rollup sum
        metrics[name] = ok(name, rows)
    data = priority_data(the_manifest, metrics)
    assert [p.category for p in data.tracelens_compute.priorities] == [
        "c7",
        "c6",
        "c5",
        "c4",
        "c3",
        "c2",
    ]
    top = data.tracelens_compute.priorities[0]
    assert (top.rank, top.display_name, top.source) == (1, "C7", "findings_rollup")
    assert (top.impact_score, top.impact_score_low, top.impact_score_high) == (8.11, 6.08, 10.14)
    assert [r.category for r in data.tracelens_compute.recommendations] == [
        "c7",
        "c6",
        "c5",
        "c4",
        "c3",
        "c2",
    ]
    assert {r.operation_count for r in data.tracelens_compute.recommendations} == {
        5
    }  # fix (a): 2 + 3
    capped = priority_data(the_manifest, metrics, max_recommendations=2)
    assert [p.category for p in capped.tracelens_compute.priorities] == ["c7", "c6"]
    assert capped.tracelens_compute.priorities[1].rank == 2
    assert len(capped.tracelens_compute.recommendations) == 2


def test_heuristic_only_category_gets_row_between_rollup_and_fallback() -> None:
    the_manifest = run_manifest(
        [compute("gemm", 1.0), compute("other", 40.0), compute("triton", 3.0), compute("ew", 5.0)]
    )
    other = [finding(3.0, method="heuristic"), finding(1.2, 2, method="heuristic")]
    metrics: dict[str, Metrics] = {
        "gemm": ok("gemm", [finding(0.6, members=4)]),
        "other": ok("other", other),
        "triton": ok("triton", [finding(7.0, method="heuristic")]),
    }
    data = priority_data(the_manifest, metrics)
    rows = [
        (p.rank, p.category, p.impact_score, p.source) for p in data.tracelens_compute.priorities
    ]
    assert rows == [
        (1, "gemm", 0.6, "findings_rollup"),
        (2, "triton", 7.0, "findings_heuristic"),
        (3, "other", 4.2, "findings_heuristic"),
        (4, "ew", None, "manifest_fallback"),
    ]
    assert data.tracelens_compute.priorities[2].impact_score_low == 3.15  # 2.25 + 0.9
    assert [(r.category, r.operation_count) for r in data.tracelens_compute.recommendations] == [
        ("gemm", 4)
    ]
    dumped = data.model_dump(mode="json")["tracelens_compute"]["priorities"]
    assert list(dumped[1]) == [
        "rank",
        "category",
        "display_name",
        "impact_score",
        "impact_score_low",
        "impact_score_high",
        "source",
    ]
    assert dumped[3] == {
        "rank": 4,
        "category": "ew",
        "display_name": "ew",
        "impact_score": None,
        "gpu_kernel_time_ms": 5.0,
        "source": "manifest_fallback",
    }


def test_manifest_fallback_threshold_and_order() -> None:
    system = entry("kernel_fusion", "system", 99.0)
    the_manifest = run_manifest(
        [
            system,
            compute("small", 2.49),
            compute("edge", 2.5),
            compute("big", 30.0, "Big"),
            compute("found", 40.0),
            compute("no_metrics", 3.0),
        ]
    )
    metrics: dict[str, Metrics] = {
        "found": ok("found", [finding(0.7)]),
        "big": ok("big", [], [estimate("b", 0.2)]),  # estimates but no finding
    }
    data = priority_data(the_manifest, metrics)
    rows = [
        (p.rank, p.category, p.display_name, p.source) for p in data.tracelens_compute.priorities
    ]
    assert rows == [
        (1, "found", "found", "findings_rollup"),
        (2, "big", "Big", "manifest_fallback"),
        (3, "no_metrics", "no_metrics", "manifest_fallback"),
        (4, "edge", "edge", "manifest_fallback"),
    ]
    assert data.tracelens_compute.priorities[1].gpu_kernel_time_ms == 30.0


def test_failed_metrics_are_listed_not_used() -> None:
    the_manifest = run_manifest([compute("gemm", 1.0), compute("moe", 1.0)])
    metrics: dict[str, Metrics] = {
        "gemm": error_metrics("gemm", "boom"),
        "moe": no_data_metrics("moe", "no MoE ops"),
        "kernel_fusion": KernelFusionMetrics(status="NO_DATA"),
        "multi_kernel": error_document("the run has no multi-kernel data"),
        "norm": ok("norm", [finding(1.0)], [estimate("kept", 1.0)]),
    }
    data = priority_data(the_manifest, metrics)
    failed = [(f.category, f.status) for f in data.failed_categories]
    assert failed == [
        ("gemm", "ERROR"),
        ("kernel_fusion", "NO_DATA"),
        ("moe", "NO_DATA"),
        ("multi_kernel", "ERROR"),
    ]
    messages = {f.category: f.message for f in data.failed_categories}
    assert messages["gemm"] == "boom"
    assert messages["moe"] == "no MoE ops"
    assert messages["kernel_fusion"] == "metrics status is NO_DATA"
    assert messages["multi_kernel"] == "the run has no multi-kernel data"
    # the usable metrics still contribute; the failed ones contribute nothing
    assert [e["operation"] for e in data.tracelens_compute.all_estimates] == ["kept"]
    assert [p.category for p in data.tracelens_compute.priorities] == ["norm"]


def test_write_priority_data_round_trip(tmp_path: Path) -> None:
    the_manifest = run_manifest([compute("gemm", 1.0)])
    gemm = ok("gemm", [finding(2.0, members=3)], [estimate("g", 2.0)])
    data = priority_data(the_manifest, {"gemm": gemm})
    path = RunFolder(tmp_path).write_priorities(data)
    assert path == tmp_path / "priority_data.json" == tmp_path / layout.PRIORITIES
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert list(loaded) == [
        "baseline_ms",
        "priorities",
        "saving_totals",
        "nothing_to_rank",
        "failed_categories",
        "tracelens_compute",
        "replay",
    ]
    assert loaded["replay"] is None  # no trace given: nothing replayed
    lists = loaded["tracelens_compute"]
    assert list(lists) == ["priorities", "recommendations", "findings", "all_estimates"]
    assert loaded == data.model_dump(mode="json")
    assert type(data).model_validate(loaded) == data  # the document parses back
    assert lists["recommendations"][0]["operation_count"] == 3
    assert lists["recommendations"][0]["type"] == "kernel_tuning"
    # `priorities` is the ranking the report shows, P-numbered on the impact scale
    assert [p["p_number"] for p in loaded["priorities"]] == [1]
    assert loaded["priorities"][0]["category"] == "gemm"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_the_obvious_key_is_the_report_ranking() -> None:
    """An idle GPU worth more than every kernel is P1 in `priorities`; TraceLens's
    compute-only rank (gemm first) sits under `tracelens_compute`, never at the top."""
    the_manifest = run_manifest([compute("gemm", 1.0)])
    the_manifest.gpu_utilization.idle_time_percent = 60.0
    metrics: dict[str, Metrics] = {
        "gemm": ok("gemm", [finding(2.0, members=3)], [estimate("g", 2.0)]),
        "cpu_idle": CpuIdleMetrics(status="OK", idle_flagged=True),
    }
    dumped = priority_data(the_manifest, metrics).model_dump(mode="json")
    assert dumped["priorities"][0]["category"] == "cpu_idle"
    assert dumped["priorities"][0]["p_number"] == 1
    assert dumped["tracelens_compute"]["priorities"][0]["category"] == "gemm"
    assert "items" not in dumped and "findings" not in dumped


def test_a_document_in_the_earlier_layout_reads(tmp_path: Path) -> None:
    the_manifest = run_manifest([compute("gemm", 1.0)])
    data = priority_data(the_manifest, {"gemm": ok("gemm", [finding(2.0)], [estimate("g", 2)])})
    dumped = data.model_dump(mode="json")
    earlier = {"baseline_ms": dumped["baseline_ms"], **dumped.pop("tracelens_compute"),
               "failed_categories": [], "items": dumped["priorities"],
               "saving_totals": dumped["saving_totals"]}  # fmt: skip
    assert type(data).model_validate(earlier) == data
