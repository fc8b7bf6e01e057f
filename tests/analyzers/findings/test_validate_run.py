"""validate_run (agent_workflow.md §4.9 + efficiency anomalies) on hand-made run folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.findings.ranking.priorities import current_layout
from rooflens.analyzers.findings.validation.run_checks import validate_run

COMPUTE = ("gemm", "elementwise")
SYSTEM = ("cpu_idle", "multi_kernel", "kernel_fusion")


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def _finding(category: str, score: float, rank: int, method: str = "quantified") -> dict:
    return {
        "category": category,
        "impact_score": score,
        "global_rank": rank,
        "estimate_method": method,
    }


def _rollup(category: str, score: float, rank: int) -> dict:
    return {"rank": rank, "category": category, "impact_score": score, "source": "findings_rollup"}


def make_run(
    tmp_path: Path,
    *,
    compute_ms: tuple[float, float] = (60.0, 40.0),
    total_ms: float = 200.0,
    compute_pct: float = 50.0,
    skip_findings: tuple[str, ...] = (),
    priority: dict | None = None,
    operations: list[dict] | None = None,
    earlier: bool = False,
) -> Path:
    run = tmp_path / "run"
    categories = [
        {"name": n, "tier": "compute_kernel", "gpu_kernel_time_ms": ms}
        for n, ms in zip(COMPUTE, compute_ms, strict=True)
    ] + [{"name": n, "tier": "system"} for n in SYSTEM]
    manifest = {
        "gpu_utilization": {"total_time_ms": total_ms, "computation_time_percent": compute_pct},
        "categories": categories,
    }
    _write(run / "category_data" / "category_manifest.json", manifest)
    for name in COMPUTE + SYSTEM:
        if name in skip_findings:
            continue
        folder = "category_findings" if name in COMPUTE else "system_findings"
        _write(run / folder / f"{name}_findings.md", "# findings\n")
    if priority is None:
        priority = {
            "findings": [
                _finding("gemm", 3.0, 1),
                _finding("elementwise", 2.0, 2),
                _finding("gemm", 1.5, 3),
                _finding("gemm", 0.7, 4, method="heuristic"),
            ],
            "priorities": [_rollup("gemm", 4.5, 1), _rollup("elementwise", 2.0, 2)],
        }
    if isinstance(priority, dict) and not earlier:  # the tests write the lists; this layout
        priority = current_layout(priority)
    _write(run / "priority_data.json", priority)
    ops = operations if operations is not None else [_op("aten::mm", 80.0)]
    _write(
        run / "category_data" / "gemm_metrics.json",
        {"category": "gemm", "comparison_scope": "standalone", "operations": ops},
    )
    return run


def _op(name: str, eff: float | None) -> dict:
    return {"name": name, "efficiency": {"efficiency_percent": eff}}


def test_clean_run_passes(tmp_path: Path) -> None:
    result = validate_run(make_run(tmp_path))
    assert result.passed
    assert all(c.messages == [] for c in (result.time_check, result.priority_check))


# --- time sanity ------------------------------------------------------------------------------


def test_time_exactly_two_percent_passes(tmp_path: Path) -> None:
    # computation 100 ms, categories 102 ms -> exactly 2 %
    result = validate_run(make_run(tmp_path, compute_ms=(62.0, 40.0)))
    assert result.time_check.status == "PASS"


def test_time_just_above_two_percent_warns(tmp_path: Path) -> None:
    result = validate_run(make_run(tmp_path, compute_ms=(62.01, 40.0)))
    check = result.time_check
    assert check.status == "WARN"
    assert (
        "Category sum (102.010 ms) vs Computation time (100.000 ms) = 2.01% difference"
        in (check.messages[0])
    )
    assert not result.passed


def test_time_below_by_more_than_two_percent_warns(tmp_path: Path) -> None:
    assert validate_run(make_run(tmp_path, compute_ms=(58.0, 39.9))).time_check.status == "WARN"


def test_time_ignores_system_tier(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    path = run / "category_data" / "category_manifest.json"
    manifest = json.loads(path.read_text())
    manifest["categories"][2]["gpu_kernel_time_ms"] = 500.0  # a system category
    _write(path, manifest)
    assert validate_run(run).time_check.status == "PASS"


@pytest.mark.parametrize("total, pct", [(200.0, 0.0), (0.0, 50.0)])
def test_zero_computation_time_warns(tmp_path: Path, total: float, pct: float) -> None:
    check = validate_run(make_run(tmp_path, total_ms=total, compute_pct=pct)).time_check
    assert check.status == "WARN"
    assert "Computation time is 0.000 ms" in check.messages[0]


def test_missing_manifest_warns_time_and_coverage(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "category_data" / "category_manifest.json").unlink()
    result = validate_run(run)
    for check in (result.time_check, result.coverage_check):
        assert check.status == "WARN"
        assert "category_manifest.json not found" in check.messages[0]


# --- coverage ---------------------------------------------------------------------------------


def test_missing_compute_findings(tmp_path: Path) -> None:
    check = validate_run(make_run(tmp_path, skip_findings=("elementwise",))).coverage_check
    assert check.status == "WARN"
    assert len(check.messages) == 1
    assert check.messages[0].startswith("Missing compute findings: elementwise")
    assert "category_findings/" in check.messages[0]


def test_missing_system_findings_includes_cpu_idle(tmp_path: Path) -> None:
    run = make_run(tmp_path, skip_findings=("cpu_idle", "kernel_fusion"))
    check = validate_run(run).coverage_check
    assert check.status == "WARN"
    assert len(check.messages) == 1
    assert check.messages[0].startswith("Missing system findings: cpu_idle, kernel_fusion")
    assert "system_findings/" in check.messages[0]


def test_findings_in_wrong_tier_folder_is_missing(tmp_path: Path) -> None:
    run = make_run(tmp_path, skip_findings=("gemm", "multi_kernel"))
    _write(run / "system_findings" / "gemm_findings.md", "x")
    _write(run / "category_findings" / "multi_kernel_findings.md", "x")
    messages = validate_run(run).coverage_check.messages
    assert messages[0].startswith("Missing system findings: multi_kernel")
    assert messages[1].startswith("Missing compute findings: gemm")


# --- priority consistency ---------------------------------------------------------------------


def test_priority_data_missing(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    (run / "priority_data.json").unlink()
    check = validate_run(run).priority_check
    assert check.status == "WARN"
    assert check.messages[0].startswith("priority_data.json not found")


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"])
def test_priority_data_unreadable(tmp_path: Path, content: str) -> None:
    run = make_run(tmp_path)
    _write(run / "priority_data.json", content)
    check = validate_run(run).priority_check
    assert check.status == "WARN"
    assert check.messages[0].startswith("priority_data.json ")
    assert "regenerate" in check.messages[0]


def test_inv1_unsorted_findings(tmp_path: Path) -> None:
    priority = {
        "findings": [_finding("gemm", 1.0, 1), _finding("gemm", 2.0, 2)],
        "priorities": [_rollup("gemm", 3.0, 1)],
    }
    check = validate_run(make_run(tmp_path, priority=priority)).priority_check
    assert check.status == "WARN"
    assert [m.split(":")[0] for m in check.messages] == ["INV1"]


def test_inv1_equal_scores_pass(tmp_path: Path) -> None:
    priority = {
        "findings": [_finding("gemm", 2.0, 1), _finding("gemm", 2.0, 2)],
        "priorities": [_rollup("gemm", 4.0, 1)],
    }
    assert validate_run(make_run(tmp_path, priority=priority)).priority_check.status == "PASS"


def test_inv2_global_rank(tmp_path: Path) -> None:
    priority = {
        "findings": [_finding("gemm", 2.0, 1), _finding("gemm", 1.0, 3)],
        "priorities": [_rollup("gemm", 3.0, 1)],
    }
    check = validate_run(make_run(tmp_path, priority=priority)).priority_check
    assert check.status == "WARN"
    assert len(check.messages) == 1
    assert check.messages[0].startswith("INV2: findings[1].global_rank=3 != 2")


def test_inv3_priority_rank(tmp_path: Path) -> None:
    priority = {
        "findings": [_finding("gemm", 2.0, 1)],
        "priorities": [
            _rollup("gemm", 2.0, 1),
            {"rank": 3, "category": "elementwise", "source": "manifest_fallback"},
        ],
    }
    check = validate_run(make_run(tmp_path, priority=priority)).priority_check
    assert check.status == "WARN"
    assert len(check.messages) == 1
    assert check.messages[0].startswith("INV3: tracelens_compute.priorities[1].rank=3 != 2")


@pytest.mark.parametrize(
    "rollup_score, status", [(4.52, "PASS"), (4.48, "PASS"), (4.53, "WARN"), (4.47, "WARN")]
)
def test_inv7_tolerance_edge(tmp_path: Path, rollup_score: float, status: str) -> None:
    # quantified gemm findings sum to 4.5; the heuristic 0.7 is not part of the sum
    priority = {
        "findings": [
            _finding("gemm", 3.0, 1),
            _finding("gemm", 1.5, 2),
            _finding("gemm", 0.7, 3, method="heuristic"),
        ],
        "priorities": [_rollup("gemm", rollup_score, 1)],
    }
    check = validate_run(make_run(tmp_path, priority=priority)).priority_check
    assert check.status == status
    if status == "WARN":
        assert check.messages == [
            f"INV7': tracelens_compute.priorities[category=gemm].impact_score={rollup_score} "
            "!= sum(findings[].impact_score)=4.50 (tol 0.02): the rollup and its findings "
            "disagree; regenerate priority_data.json."
        ]


def test_inv7_only_for_findings_rollup_rows(tmp_path: Path) -> None:
    priority = {
        "findings": [_finding("gemm", 0.7, 1, method="heuristic")],
        "priorities": [
            {"rank": 1, "category": "gemm", "impact_score": 0.7, "source": "findings_heuristic"},
            {"rank": 2, "category": "elementwise", "impact_score": None,
             "source": "manifest_fallback"},
        ],
    }  # fmt: skip
    assert validate_run(make_run(tmp_path, priority=priority)).priority_check.status == "PASS"


# --- efficiency anomalies ---------------------------------------------------------------------


def _item(
    n: int,
    mid: float,
    *,
    low: float | None = None,
    high: float | None = None,
    cap: float = 100.0,
    method: str = "quantified",
    pool: str = "kernels",
) -> dict:
    low = mid / 2 if low is None else low
    high = mid * 1.5 if high is None else high
    if method == "unquantified":
        reason = "input shapes not recorded"
        return {"p_number": n, "estimate_method": method, "saving": None,
                "percent_mid": None, "unquantified_reason": reason}  # fmt: skip
    saving = {"low_ms": low, "mid_ms": mid, "high_ms": high, "cap_ms": cap, "pool": pool}
    return {"p_number": n, "estimate_method": method, "saving": saving,
            "percent_mid": round(mid / 200.0 * 100, 2)}  # fmt: skip


def _with_items(items: list[dict], totals: dict | None = None) -> dict:
    priority = {"baseline_ms": 200.0, "findings": [], "priorities": [], "items": items}
    return priority | ({"saving_totals": totals} if totals else {})


def _codes(tmp_path: Path, priority: dict) -> list[str]:
    check = validate_run(make_run(tmp_path, priority=priority)).priority_check
    return [m.split(":")[0] for m in check.messages]


def test_ranked_items_pass(tmp_path: Path) -> None:
    # an idle item of 40 ms (20 % of the 200 ms window) ranks above a 10 ms GEMM item, and a
    # unquantified item (no saving) comes last
    items = [_item(1, 40.0, pool="idle"), _item(2, 10.0), _item(3, 12.0, method="unquantified")]
    totals = {"mid_ms": 50.0, "by_pool_mid_ms": {"idle": 40.0, "kernels": 10.0},
              "pool_ms": {"idle": 80.0, "kernels": 100.0}}  # fmt: skip
    assert _codes(tmp_path, _with_items(items, totals)) == []


@pytest.mark.parametrize(
    ("items", "codes"),
    [
        ([_item(2, 40.0), _item(1, 10.0)], ["INV8", "INV8"]),
        ([_item(1, 10.0), _item(2, 40.0)], ["INV9"]),
        ([_item(1, 10.0, method="unquantified"), _item(2, 5.0)], ["INV9"]),
        ([{**_item(1, 10.0, method="unquantified"), "unquantified_reason": None}], ["INV10"]),
        ([_item(1, 10.0, cap=8.0)], ["INV10"]),  # high 15 ms above its 8 ms cap
        ([_item(1, 10.0, low=11.0)], ["INV10"]),
        ([{**_item(1, 10.0), "percent_mid": 7.0}], ["INV10"]),  # 10 ms of 200 ms is 5 %
    ],
)
def test_item_invariants(tmp_path: Path, items: list[dict], codes: list[str]) -> None:
    assert _codes(tmp_path, _with_items(items)) == codes


def test_totals_never_take_more_than_a_pool_holds(tmp_path: Path) -> None:
    totals = {"mid_ms": 210.0, "by_pool_mid_ms": {"idle": 90.0},
              "pool_ms": {"idle": 80.0}}  # fmt: skip
    assert _codes(tmp_path, _with_items([_item(1, 10.0)], totals)) == ["INV11", "INV11"]


def test_efficiency_exactly_110_passes(tmp_path: Path) -> None:
    ops = [_op("aten::mm", 110.0), _op("aten::bmm", None), {"name": "no_eff", "efficiency": {}}]
    assert validate_run(make_run(tmp_path, operations=ops)).efficiency_check.status == "PASS"


def test_efficiency_above_110_is_listed_per_operation(tmp_path: Path) -> None:
    """Listed as notes: no saving was drawn from them, so the run is still consistent."""
    ops = [_op("aten::mm", 110.01), _op("aten::addmm", 250.0), _op("aten::bmm", 90.0)]
    run = make_run(tmp_path, operations=ops)
    _write(
        run / "category_data" / "sdpa_fwd_metrics.json",
        {"comparison_scope": "standalone", "operations": [_op("flash_attn", 130.5)]},
    )
    result = validate_run(run)
    check = result.efficiency_check
    assert (check.status, check.messages) == ("PASS", [])
    assert [m.split(":", 1)[1].split(" (")[0] for m in check.notes] == [
        " category=gemm operation=aten::mm efficiency=110.01%",
        " category=gemm operation=aten::addmm efficiency=250%",
        " category=sdpa_fwd operation=flash_attn efficiency=130.5%",
    ]
    assert result.passed
    assert "  - note: Efficiency anomaly: category=gemm operation=aten::mm" in result.summary()


def test_an_anomaly_feeding_a_quantified_estimate_warns(tmp_path: Path) -> None:
    """The estimate is matched to its row by operation and kernel time: the 2 ms aten::addmm
    above the roof feeds one, the 5 ms one of the same name within the roof does not count."""
    ops = [
        {**_op("aten::addmm", 250.0), "time_ms": 2.0},
        {**_op("aten::addmm", 60.0), "time_ms": 5.0},
    ]
    run = make_run(tmp_path, operations=ops)
    estimates = [
        {"operation": "aten::addmm", "time_ms": t, "estimate_method": "quantified"}
        for t in (2.0, 5.0)
    ]
    document = {"category": "gemm", "comparison_scope": "standalone", "operations": ops}
    _write(run / "category_data" / "gemm_metrics.json", document | {"impact_estimates": estimates})
    result = validate_run(run)
    check = result.efficiency_check
    assert check.status == "WARN" and check.notes == []
    (message,) = check.messages
    assert "operation=aten::addmm efficiency=250%" in message
    assert "feeds a quantified estimate" in message
    assert not result.passed


def test_an_operation_flagged_for_instances_over_the_roof_is_listed(tmp_path: Path) -> None:
    warning = "[ANOMALY] some instances exceed 110% of the roofline (max 163.0%, mean 102.2%)"
    op = {
        "name": "vllm::unified_attention_with_output",
        "efficiency": {"efficiency_percent": 102.2, "is_anomaly": True, "warning": warning},
    }
    check = validate_run(make_run(tmp_path, operations=[op])).efficiency_check
    assert check.status == "PASS"
    (message,) = check.notes
    assert "operation=vllm::unified_attention_with_output efficiency=102.2% on average" in message
    assert "max 163.0%" in message and "Do not treat it as a tuning target" in message


def test_efficiency_ignores_comparative_and_unreadable_metrics(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    _write(
        run / "category_data" / "reduce_metrics.json",
        {"comparison_scope": "comparative", "operations": [_op("sum", 500.0)]},
    )
    _write(run / "category_data" / "other_metrics.json", "{broken")
    assert validate_run(run).efficiency_check.status == "PASS"


def test_inv12_the_earlier_layout_is_caught(tmp_path: Path) -> None:
    """A document whose `priorities` are TraceLens's compute-only rows (the ranking under
    `items`) misleads a reader of the obvious key: INV12."""
    priority = _with_items([_item(1, 40.0, pool="idle")])
    check = validate_run(make_run(tmp_path, priority=priority, earlier=True)).priority_check
    assert check.status == "WARN"
    assert [m.split(":")[0] for m in check.messages] == ["INV12"]
    assert "a reader of 'priorities' gets a compute-only rank" in check.messages[0]


def test_inv12_priorities_hold_the_p_numbered_items(tmp_path: Path) -> None:
    priority = {"baseline_ms": 200.0, "priorities": [_rollup("gemm", 4.5, 1)],
                "tracelens_compute": {"priorities": [], "findings": []}}  # fmt: skip
    assert "INV12" in _codes(tmp_path, priority)
    assert "INV12" in _codes(tmp_path, {"baseline_ms": 200.0, "priorities": []})


def test_a_document_of_the_wrong_shape_names_the_file_and_the_field(tmp_path: Path) -> None:
    run = make_run(tmp_path, priority={"baseline_ms": 200.0, "priorities": {"p_number": 1}})
    manifest = run / "category_data" / "category_manifest.json"
    _write(manifest, {"gpu_utilization": [], "categories": {"gemm": 1}})
    result = validate_run(run)
    assert result.time_check.messages == [
        "category_data/category_manifest.json does not match its model (categories: Input "
        "should be a valid array): run the prepare step before validating."
    ]
    (message,) = result.priority_check.messages
    assert message.startswith("priority_data.json does not match its model (priorities: ")
    assert message.endswith("regenerate it with the priorities step.")
