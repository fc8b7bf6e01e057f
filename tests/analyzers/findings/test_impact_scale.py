"""One impact scale: savings capped by what they can recover, system and compute findings
ranked together, totals that never give out more than a pool of the window holds."""

from __future__ import annotations

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.kernel_fusion import FusionEstimate, KernelFusionMetrics
from rooflens.analyzers.categories.models import CategoryMetrics, Finding, ImpactEstimate
from rooflens.analyzers.findings.ranking.candidates import candidates
from rooflens.analyzers.findings.ranking.impact_scale import Candidate, Saving, rank_items, totals
from rooflens.analyzers.prepare.categories import GpuUtilization

# a ResNet-like window: 3,390 ms, GPU idle 89 %, computing 11 %
IDLE_GPU = GpuUtilization(
    total_time_ms=3390.0, computation_time_percent=11.0, idle_time_percent=89.0
)


def saving(mid: float, cap: float, pool: str = "kernels") -> Saving:
    return Saving(low_ms=mid / 2, mid_ms=mid, high_ms=mid * 2, cap_ms=cap, pool=pool, basis="t")


def test_a_saving_never_exceeds_its_cap_and_stays_ordered() -> None:
    s = Saving(low_ms=5, mid_ms=10, high_ms=20, cap_ms=8, pool="kernels", basis="b")
    assert s.range_ms == (5.0, 8.0, 8.0)
    backwards = Saving(low_ms=9, mid_ms=3, high_ms=-1, cap_ms=100, pool="idle", basis="b")
    assert backwards.range_ms == (9.0, 9.0, 9.0)
    assert s.percent(80.0) == (6.25, 10.0, 10.0)


def gemm_finding(mid_pct: float, time_ms: float, library: str = "cuBLAS") -> CategoryMetrics:
    member = ImpactEstimate(
        operation="aten::mm", category="gemm", type="kernel_tuning",
        estimate_method="quantified", impact_score=mid_pct, impact_score_low=mid_pct * 0.8,
        impact_score_high=mid_pct * 1.2, efficiency_pct=40.0, bound_type="compute",
        library=library, time_ms=time_ms,
    )  # fmt: skip
    finding = Finding(
        rank=1, bound_type="compute", library=library, eff_bucket="30-60",
        estimate_method="quantified", impact_score=mid_pct, impact_score_low=mid_pct * 0.8,
        impact_score_high=mid_pct * 1.2, member_count=1, members=(member,),
    )  # fmt: skip
    return CategoryMetrics(category="gemm", status="OK", category_findings=(finding,))


def test_an_idle_gpu_outranks_small_compute_items() -> None:
    metrics = {"gemm": gemm_finding(2.7, 200.0), "cpu_idle": CpuIdleMetrics(status="OK")}
    items = rank_items(candidates(metrics, IDLE_GPU, {"gemm": "GEMM"}), 3390.0)
    assert [(i.p_number, i.category, i.kind) for i in items] == [
        (1, "cpu_idle", "system"),
        (2, "gemm", "compute"),
    ]
    idle = items[0]
    # 89 % of 3,390 ms = 3,017.1 ms idle; 25/50/75 % of it recoverable
    assert idle.saving.range_ms == pytest.approx((754.275, 1508.55, 2262.825))
    assert (idle.percent_low, idle.percent_mid, idle.percent_high) == (22.25, 44.5, 66.75)
    gemm = items[1]
    assert gemm.saving.mid_ms == pytest.approx(0.027 * 3390.0)  # 91.53 ms
    assert gemm.saving.cap_ms == 200.0
    assert gemm.title == "`GEMM`: `aten::mm` (compute-bound, cuBLAS)"  # names as code spans


def test_an_unknown_library_is_left_out_of_the_title() -> None:
    """As in the card headings: `(compute-bound)`, never `(compute-bound, Unknown)`."""
    metrics = {"gemm": gemm_finding(2.7, 200.0, library="Unknown")}
    [item] = rank_items(candidates(metrics, IDLE_GPU, {"gemm": "GEMM"}), 3390.0)
    assert item.title == "`GEMM`: `aten::mm` (compute-bound)"


def test_fusion_savings_are_capped_by_the_kernels_time() -> None:
    gpu = GpuUtilization(total_time_ms=1000.0, computation_time_percent=56.68)
    claimed = FusionEstimate(
        operation="softmax chain", impact_score=73.59, impact_score_low=60.0,
        impact_score_high=80.0, estimation="full", bound_type="memory", time_ms=300.0,
        instance_count=10, kernel_count=4, modeled_kernel_count=4, confidence="medium",
        affected_gpu_kernels=["k"], fusion_type="memory_bound",
    )  # fmt: skip
    fusion = KernelFusionMetrics(status="OK", impact_estimates=[claimed])
    [item] = rank_items(candidates({"kernel_fusion": fusion}, gpu, {}), 1000.0)
    assert item.saving.range_ms == (300.0, 300.0, 300.0)  # never more than the kernels ran
    assert item.percent_mid == 30.0


def test_a_fusion_saving_follows_the_time_its_instances_really_took() -> None:
    """The first instance (164.8 µs) times 117 instances claims 19.28 ms; the instances took
    3.96 ms. The saving share (16.571 of 19.281 ms at the mid) applies to 3.96 ms."""
    gpu = GpuUtilization(total_time_ms=56.52, computation_time_percent=34.03)
    extrapolated = FusionEstimate(
        operation="BatchNorm2d", impact_score=29.32, impact_score_low=25.13,
        impact_score_high=33.51, estimation="full", bound_type="memory", time_ms=19.281,
        instance_count=117, kernel_count=4, modeled_kernel_count=4, confidence="high",
        affected_gpu_kernels=["k"], fusion_type="memory_bound", measured_time_ms=3.961,
    )  # fmt: skip
    fusion = KernelFusionMetrics(status="OK", impact_estimates=[extrapolated])
    [item] = rank_items(candidates({"kernel_fusion": fusion}, gpu, {}), 56.52)
    share = 3.961 / 19.281
    assert item.saving.cap_ms == 3.961
    assert item.saving.mid_ms == pytest.approx(0.2932 * 56.52 * share)  # 3.404 ms
    assert item.saving.high_ms == pytest.approx(0.3351 * 56.52 * share)
    assert item.saving.high_ms < 3.961
    assert "3.96 ms its instances took (not 19.28 ms" in item.saving.basis


def test_totals_never_give_out_more_than_a_pool_holds() -> None:
    gpu = GpuUtilization(total_time_ms=100.0, computation_time_percent=60.0, idle_time_percent=40.0)
    items = rank_items(
        [
            Candidate(category="a", kind="compute", title="a", estimate_method="quantified",
                      saving=saving(40.0, 50.0)),
            Candidate(category="b", kind="kernel_fusion", title="b",
                      estimate_method="quantified", saving=saving(30.0, 45.0)),
            Candidate(category="cpu_idle", kind="system", title="idle",
                      estimate_method="quantified", saving=saving(10.0, 40.0, "idle")),
            Candidate(category="c", kind="compute", title="guess",
                      estimate_method="unquantified", saving=None,
                      unquantified_reason="input shapes not recorded"),
        ],
        100.0,
    )  # fmt: skip
    assert [i.category for i in items] == ["a", "b", "cpu_idle", "c"]  # unquantified last
    assert (items[-1].saving, items[-1].percent_mid) == (None, None)
    total = totals(items, gpu)
    # kernels pool 60 ms: 40 + min(30, 20); idle pool 40 ms: 10; the unquantified item adds
    # nothing
    assert total.by_pool_mid_ms["kernels"] == 60.0 and total.by_pool_mid_ms["idle"] == 10.0
    assert total.mid_ms == 70.0 and total.percent_mid == 70.0
    # high: kernels 50 (a, capped) + 10 (b: 45 capped, 10 left in the pool); idle 20
    assert total.high_ms == 80.0
    assert total.pool_ms == {"kernels": 60.0, "idle": 40.0, "exposed_memcpy": 0.0,
                             "exposed_comm": 0.0}  # fmt: skip


def test_failed_and_tiny_system_stretches_give_no_item() -> None:
    quiet = GpuUtilization(
        total_time_ms=100.0, computation_time_percent=99.5, idle_time_percent=0.5
    )
    metrics = {
        "cpu_idle": CpuIdleMetrics(status="OK"),
        "gemm": CategoryMetrics(category="gemm", status="ERROR", error="x"),
    }
    assert candidates(metrics, quiet, {}) == []
