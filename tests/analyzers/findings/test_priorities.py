"""generate_priority_data / write_priority_data on hand-made category_data folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.findings.priorities import generate_priority_data, write_priority_data

# computation time = 100 ms × 50 % = 50 ms ⇒ fallback threshold 2.5 ms
GPU = {"total_time_ms": 100.0, "computation_time_percent": 50.0, "idle_time_percent": 50.0}


def manifest(run_dir: Path, categories: list[dict[str, Any]]) -> None:
    folder = run_dir / "category_data"
    folder.mkdir(parents=True, exist_ok=True)
    data = {"gpu_utilization": GPU, "categories": categories}
    (folder / "category_manifest.json").write_text(json.dumps(data), encoding="utf-8")


def compute(name: str, time_ms: float, display: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "display_name": display or name,
        "tier": "compute_kernel",
        "gpu_kernel_time_ms": time_ms,
    }


def estimate(op: str, mid: float) -> dict[str, Any]:
    return {"operation": op, "estimate_method": "quantified", "impact_score": mid}


def finding(
    mid: float, rank: int = 1, method: str = "quantified", members: int = 1
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bound_type": "memory" if method == "quantified" else "unmodeled",
        "library": "Unknown",
        "eff_bucket": "0-30" if method == "quantified" else "unknown",
        "estimate_method": method,
        "impact_score": mid,
        "impact_score_low": round(mid * 0.75, 2),
        "impact_score_high": round(mid * 1.25, 2),
    }
    if method == "heuristic":
        out["percent_of_total"] = round(mid / 0.3, 2)
    out.update(member_count=members, members=[{"operation": "op"}] * members, rank=rank)
    return out


def metrics(run_dir: Path, stem: str, payload: dict[str, Any] | str) -> None:
    path = run_dir / "category_data" / f"{stem}_metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = payload if isinstance(payload, str) else json.dumps(payload)
    path.write_text(text, encoding="utf-8")


def ok(category: str | None, findings: list[dict], estimates: list[dict] | None = None) -> dict:
    data: dict[str, Any] = {"status": "OK", "impact_estimates": estimates or []}
    if category is not None:
        data["category"] = category
        data["category_findings"] = findings
    return data


def test_estimates_and_findings_in_filename_order(tmp_path: Path) -> None:
    manifest(tmp_path, [compute("gemm", 1.0), compute("sdpa", 1.0)])
    metrics(tmp_path, "sdpa", ok("sdpa", [finding(2.0)], [estimate("s", 2.0)]))
    metrics(tmp_path, "gemm", ok("gemm", [finding(3.0), finding(2.0, 2)], [estimate("g", 3.0)]))
    metrics(tmp_path, "kernel_fusion", ok("kernel_fusion", [], [estimate("f", 9.0)]))
    metrics(tmp_path, "cpu_idle", ok(None, [], [estimate("idle", 0.1)]))
    data = generate_priority_data(tmp_path)
    assert data.baseline_ms == 100.0
    assert [e["operation"] for e in data.all_estimates] == ["idle", "g", "f", "s"]
    got = [(f.category, f.category_rank, f.global_rank, f.impact_score) for f in data.findings]
    # ties keep the filename order: gemm's second finding before sdpa's
    assert got == [("gemm", 1, 1, 3.0), ("gemm", 2, 2, 2.0), ("sdpa", 1, 3, 2.0)]
    assert data.failed_categories == []


def test_finding_dump_renames_rank_and_keeps_key_order(tmp_path: Path) -> None:
    manifest(tmp_path, [compute("other", 1.0)])
    metrics(tmp_path, "other", ok("other", [finding(1.5, method="heuristic"), finding(0.9, 2)]))
    dumped = generate_priority_data(tmp_path).model_dump(mode="json")["findings"]
    heuristic, quantified = dumped
    assert list(heuristic)[-4:] == ["members", "category", "category_rank", "global_rank"]
    assert "rank" not in heuristic
    assert heuristic["percent_of_total"] == 5.0
    assert "percent_of_total" not in quantified
    assert list(quantified)[:3] == ["bound_type", "library", "eff_bucket"]


def test_rollup_sums_quantified_only_and_caps(tmp_path: Path) -> None:
    names = [f"c{i}" for i in range(8)]
    manifest(tmp_path, [compute(n, 10.0, n.upper()) for n in names])
    for i, name in enumerate(names):
        rows = [finding(1.0 + i, members=2), finding(0.11, 2, members=3)]
        rows.append(finding(50.0, 3, method="heuristic"))  # mixed: not in the rollup sum
        metrics(tmp_path, name, ok(name, rows))
    data = generate_priority_data(tmp_path)
    assert [p.category for p in data.priorities] == ["c7", "c6", "c5", "c4", "c3", "c2"]
    top = data.priorities[0]
    assert (top.rank, top.display_name, top.source) == (1, "C7", "findings_rollup")
    assert (top.impact_score, top.impact_score_low, top.impact_score_high) == (8.11, 6.08, 10.14)
    assert [r.category for r in data.recommendations] == ["c7", "c6", "c5", "c4", "c3", "c2"]
    assert {r.operation_count for r in data.recommendations} == {5}  # fix (a): 2 + 3
    assert generate_priority_data(tmp_path, max_recommendations=2).priorities[1].rank == 2
    assert len(generate_priority_data(tmp_path, max_recommendations=2).recommendations) == 2


def test_heuristic_only_category_gets_row_between_rollup_and_fallback(tmp_path: Path) -> None:
    manifest(
        tmp_path,
        [compute("gemm", 1.0), compute("other", 40.0), compute("triton", 3.0), compute("ew", 5.0)],
    )
    metrics(tmp_path, "gemm", ok("gemm", [finding(0.6, members=4)]))
    other = [finding(3.0, method="heuristic"), finding(1.2, 2, method="heuristic")]
    metrics(tmp_path, "other", ok("other", other))
    metrics(tmp_path, "triton", ok("triton", [finding(7.0, method="heuristic")]))
    data = generate_priority_data(tmp_path)
    rows = [(p.rank, p.category, p.impact_score, p.source) for p in data.priorities]
    assert rows == [
        (1, "gemm", 0.6, "findings_rollup"),
        (2, "triton", 7.0, "findings_heuristic"),
        (3, "other", 4.2, "findings_heuristic"),
        (4, "ew", None, "manifest_fallback"),
    ]
    assert data.priorities[2].impact_score_low == 3.15  # 2.25 + 0.9
    assert [(r.category, r.operation_count) for r in data.recommendations] == [("gemm", 4)]
    dumped = data.model_dump(mode="json")["priorities"]
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


def test_manifest_fallback_threshold_and_order(tmp_path: Path) -> None:
    system = {"name": "kernel_fusion", "tier": "system", "gpu_kernel_time_ms": 99.0}
    manifest(
        tmp_path,
        [
            system,
            compute("small", 2.49),
            compute("edge", 2.5),
            compute("big", 30.0, "Big"),
            compute("found", 40.0),
            compute("no_metrics", 3.0),
        ],
    )
    metrics(tmp_path, "found", ok("found", [finding(0.7)]))
    metrics(tmp_path, "big", ok("big", [], [estimate("b", 0.2)]))  # estimates but no finding
    data = generate_priority_data(tmp_path)
    rows = [(p.rank, p.category, p.display_name, p.source) for p in data.priorities]
    assert rows == [
        (1, "found", "found", "findings_rollup"),
        (2, "big", "Big", "manifest_fallback"),
        (3, "no_metrics", "no_metrics", "manifest_fallback"),
        (4, "edge", "edge", "manifest_fallback"),
    ]
    assert data.priorities[1].gpu_kernel_time_ms == 30.0


def test_failed_metrics_are_listed_not_used(tmp_path: Path) -> None:
    manifest(tmp_path, [compute("gemm", 1.0), compute("moe", 1.0)])
    metrics(tmp_path, "gemm", {"category": "gemm", "status": "ERROR", "error": "boom"})
    no_data = {"category": "moe", "status": "NO_DATA", "message": "no MoE ops"}
    metrics(tmp_path, "moe", no_data)
    metrics(tmp_path, "kernel_fusion", {"category": "kernel_fusion", "status": "NO_DATA"})
    metrics(tmp_path, "broken", "{not json")
    metrics(tmp_path, "listy", "[1, 2]")
    bad = ok("sdpa", [{"impact_score": 1.0, "rank": 1}], [estimate("lost", 1.0)])
    metrics(tmp_path, "sdpa", bad)
    metrics(tmp_path, "norm", ok("norm", [finding(1.0)], [estimate("kept", 1.0)]))
    data = generate_priority_data(tmp_path)
    failed = [(f.category, f.status) for f in data.failed_categories]
    assert failed == [
        ("broken", "UNREADABLE"),
        ("gemm", "ERROR"),
        ("kernel_fusion", "NO_DATA"),
        ("listy", "INVALID"),
        ("moe", "NO_DATA"),
        ("sdpa", "INVALID"),
    ]
    messages = {f.category: f.message for f in data.failed_categories}
    assert messages["gemm"] == "boom"
    assert messages["moe"] == "no MoE ops"
    assert messages["kernel_fusion"] == "metrics status is NO_DATA"
    assert "member_count" in messages["sdpa"]
    # the usable file still contributes; the invalid one contributes nothing
    assert [e["operation"] for e in data.all_estimates] == ["kept"]
    assert [p.category for p in data.priorities] == ["norm"]


def test_missing_manifest_raises_instead_of_empty_document(tmp_path: Path) -> None:
    metrics(tmp_path, "gemm", ok("gemm", [finding(1.0)]))
    with pytest.raises(FileNotFoundError):
        generate_priority_data(tmp_path)


def test_write_priority_data_round_trip(tmp_path: Path) -> None:
    manifest(tmp_path, [compute("gemm", 1.0)])
    metrics(tmp_path, "gemm", ok("gemm", [finding(2.0, members=3)], [estimate("g", 2.0)]))
    data = generate_priority_data(tmp_path)
    path = write_priority_data(tmp_path, data)
    assert path == tmp_path / "priority_data.json"
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert list(loaded) == [
        "baseline_ms",
        "priorities",
        "recommendations",
        "findings",
        "all_estimates",
        "failed_categories",
    ]
    assert loaded == data.model_dump(mode="json")
    assert loaded["recommendations"][0]["operation_count"] == 3
    assert loaded["recommendations"][0]["type"] == "kernel_tuning"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
