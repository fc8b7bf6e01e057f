"""Hand-computed cases for the shared category pipeline (agent_workflow.md §3.3–§3.9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories import analyze_category, category_for
from rooflens.analyzers.categories.impact import (
    category_findings,
    eff_bucket,
    impact_estimates,
)
from rooflens.analyzers.categories.models import ImpactEstimate
from rooflens.analyzers.categories.scoring import (
    build_operations,
    call_chain,
    classify_library,
    format_args,
    kernel_name,
    launcher_path,
    score,
)
from rooflens.analyzers.pipeline.folder import RunFolder
from tests.helpers.pipeline_runs import category_metadata

META = category_metadata(
    peak_hbm_bw_tbs=5.3,
    max_achievable_tflops={"matrix_bf16": 708, "vector_bf16": 163},
    util={"total_time_ms": 100.0},
)


def row(name: str = "aten::op", time_us: float = 1000.0, pct: float | None = 50.0, **cols: Any):
    base = {
        "name": name,
        "operation_count": 1,
        "Kernel Time (µs)_sum": time_us,
        "Kernel Time (µs)_mean": time_us,
        "Kernel Time (µs)_std": 0.0,
        "Pct Roofline_mean": pct,
        "Roofline Bound": "MEMORY_BOUND" if pct is not None else None,
        "Compute Spec": "vector_bf16" if pct is not None else None,
    }
    return base | cols


def frame(*rows: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(list(rows))


def scores(e: ImpactEstimate) -> tuple[float, float, float]:
    return (e.impact_score_low, e.impact_score, e.impact_score_high)


def estimate_for(
    pct: float | None, time_us: float = 20_000.0, **cols: Any
) -> ImpactEstimate | None:
    ops = build_operations(frame(row(time_us=time_us, pct=pct, **cols)), META)
    found = impact_estimates(ops, "x", 100.0)
    return found[0] if found else None


def test_quantified_scores_use_the_75_875_100_targets() -> None:
    e = estimate_for(50.0)  # 20 ms of 100 ms, half the roof: gap_high 0.5 x 20 %
    assert e is not None and e.estimate_method == "quantified" and e.type == "kernel_tuning"
    assert scores(e) == (7.5, 8.75, 10.0)
    assert e.efficiency_pct == 50.0 and e.bound_type == "memory"


def test_per_op_floor_on_impact_score_high() -> None:
    assert estimate_for(99.95, time_us=10_000.0) is None  # high = 0.0005 x 10 = 0.005
    kept = estimate_for(99.8, time_us=10_000.0)  # high = 0.002 x 10 = 0.02
    assert kept is not None and kept.impact_score_high == 0.02


def test_efficiency_up_to_110_is_a_zero_gap_and_dropped() -> None:
    assert estimate_for(110.0) is None
    assert estimate_for(105.0) is None


def test_anomaly_above_110_goes_heuristic() -> None:
    ops = build_operations(frame(row(time_us=10_000.0, pct=110.01)), META)
    assert ops[0].efficiency.is_anomaly and ops[0].efficiency_warning.startswith("[ANOMALY]")
    (e,) = impact_estimates(ops, "x", 100.0)
    assert e.estimate_method == "heuristic" and e.type == "unmodeled_significant"
    assert scores(e) == (1.5, 3.0, 4.5)  # 0.15 / 0.30 / 0.45 x 10 % of E2E
    assert e.efficiency_pct is None and e.bound_type is None and e.percent_of_total == 10.0


def test_instances_above_110_make_the_row_anomalous_even_when_the_mean_is_not() -> None:
    """vLLM gpt-oss attention: window layers at 163 %, full layers at 46 %, one signature."""
    ops = build_operations(
        frame(row(time_us=10_000.0, pct=102.2, **{"Pct Roofline_max": 163.0})), META
    )
    eff = ops[0].efficiency
    assert eff.is_anomaly and eff.efficiency_percent == 102.2
    assert eff.warning.startswith(
        "[ANOMALY] some instances exceed 110% of the roofline (max 163.0%"
    )
    (e,) = impact_estimates(ops, "x", 100.0)
    assert e.estimate_method == "heuristic"  # no quantified gap from a model that overshoots
    clean = build_operations(frame(row(pct=102.2, **{"Pct Roofline_max": 110.0})), META)
    assert not clean[0].efficiency.is_anomaly  # 110 % exactly is not above the limit


def test_no_perf_model_goes_heuristic_with_fractions() -> None:
    e = estimate_for(None, time_us=30_000.0)
    assert e is not None and scores(e) == (4.5, 9.0, 13.5)


def test_no_baseline_gives_no_estimate() -> None:
    no_baseline = META.model_copy(update={"gpu_utilization": category_metadata().gpu_utilization})
    ops = build_operations(frame(row(pct=None)), no_baseline)
    assert ops[0].percent_of_total is None
    assert impact_estimates(ops, "x", None) == ()


@pytest.mark.parametrize(
    ("pct", "bucket"),
    [
        (0.0, "0-30"),
        (29.99, "0-30"),
        (30.0, "30-60"),
        (59.99, "30-60"),
        (60.0, "60-100"),
        (104.0, "60-100"),
        (None, "unknown"),
    ],
)
def test_eff_buckets(pct: float | None, bucket: str) -> None:
    assert eff_bucket(pct) == bucket


def quantified(op: str, mid: float, eff: float = 10.0, library: str | None = None):
    return ImpactEstimate(
        operation=op,
        category="x",
        type="kernel_tuning",
        estimate_method="quantified",
        impact_score=mid,
        impact_score_low=mid * 0.75 / 0.875,
        impact_score_high=mid / 0.875,
        efficiency_pct=eff,
        bound_type="memory",
        library=library,
        time_ms=1.0,
    )


def heuristic(op: str, pct: float, library: str | None = None):
    return ImpactEstimate(
        operation=op,
        category="x",
        type="unmodeled_significant",
        estimate_method="heuristic",
        impact_score=0.3 * pct,
        impact_score_low=0.15 * pct,
        impact_score_high=0.45 * pct,
        efficiency_pct=None,
        bound_type=None,
        library=library,
        time_ms=1.0,
        percent_of_total=pct,
    )


def test_pitem_gate_is_on_the_summed_mid_score() -> None:
    kept = category_findings([quantified("a", 0.25), quantified("b", 0.25)])
    assert len(kept) == 1 and kept[0].impact_score == 0.5 and kept[0].member_count == 2
    assert category_findings([quantified("a", 0.25), quantified("b", 0.24)]) == ()
    assert category_findings([quantified("a", 0.49)]) == ()


def test_findings_group_by_bound_library_bucket_and_rank() -> None:
    found = category_findings(
        [
            quantified("a", 0.4, eff=10.0),
            quantified("b", 0.4, eff=20.0),  # same bucket as a: summed 0.8
            quantified("c", 2.0, eff=45.0),  # 30-60
            quantified("d", 0.6, eff=10.0, library="Tensile"),  # own library group
        ]
    )
    assert [(f.rank, f.library, f.eff_bucket, f.impact_score) for f in found] == [
        (1, "Unknown", "30-60", 2.0),
        (2, "Unknown", "0-30", 0.8),
        (3, "Tensile", "0-30", 0.6),
    ]
    assert found[1].document()["members"][0]["operation"] == "a"
    assert "percent_of_total" not in found[0].document()


def test_heuristic_groups_by_operation_name() -> None:
    found = category_findings(
        [heuristic("aten::cat", 1.0), heuristic("aten::cat", 1.0, "Triton"), heuristic("b", 1.0)]
    )
    (f,) = found  # b alone: 0.30 < 0.5
    assert (f.bound_type, f.library, f.eff_bucket, f.estimate_method) == (
        "unmodeled",
        "Triton",
        "unknown",
        "heuristic",
    )
    assert (f.impact_score, f.percent_of_total, f.member_count) == (0.6, 2.0, 2)


def test_variance_flag_needs_count_share_and_cov() -> None:
    def flagged(count: int, time_us: float, std: float) -> dict[str, Any]:
        ops = build_operations(
            frame(
                row(
                    time_us=time_us,
                    operation_count=count,
                    **{"Kernel Time (µs)_mean": 10.0, "Kernel Time (µs)_std": std},
                )
            ),
            META,
        )
        return {k: getattr(ops[0], k) for k in ("cov", "high_variance")}

    assert flagged(11, 5000.0, 10.5) == {"cov": 1.05, "high_variance": True}
    assert flagged(11, 5000.0, 10.0) == {"cov": 1.0, "high_variance": False}
    assert flagged(10, 5000.0, 20.0) == {"cov": None, "high_variance": None}  # count 10
    assert flagged(11, 4990.0, 20.0) == {"cov": None, "high_variance": None}  # 4.99 %


def test_fusion_flagged_ops_are_not_estimated() -> None:
    details = json.dumps([{"name": "void at::native::foo_kernel<float>(int)"}])
    ops = build_operations(
        frame(row(pct=10.0, kernel_details_summary=details)),
        META,
        fusion_map={"void at::native::foo_kernel": "fuse foo+bar"},
    )
    assert ops[0].fusion_flagged is True
    assert ops[0].fusion_candidate_name == "fuse foo+bar"
    assert ops[0].library == "PyTorch Native"
    assert impact_estimates(ops, "x", 100.0) == ()


@pytest.mark.parametrize(
    ("name", "kernels", "library"),
    [
        ("aiter::mha_fwd", ["Cijk_x"], "AITER"),
        ("vllm::ROCM_AITER_op", [], "AITER"),
        ("fbgemm::quantize", [], "FBGEMM"),
        ("MIOpen_conv", [], "MIOpen"),
        ("triton_poi_fused_add_0", [], "Triton"),
        ("aten::mm", ["Cijk_Alik_Bljk_BBS"], "Tensile"),
        ("aten::mm", ["wvSplitK_kernel"], "rocBLAS"),
        ("aten::mm", ["ck_tile::FmhaFwdKernel"], "CK"),
        ("aten::sum", ["rocprim::detail::reduce"], "rocPRIM"),
        ("aten::add", ["void at::native::vectorized_elementwise_kernel<4>"], "PyTorch Native"),
        # each kernel's own vendor: an NVIDIA kernel never reads as an AMD library
        ("aten::mm", ["cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"], "CUTLASS"),
        ("aten::mm", ["ampere_sgemm_128x64_nn"], "cuBLAS"),
        (
            "aten::addmm",
            [
                "void cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, float>()",
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
            ],
            "cuBLAS",
        ),
        ("aten::cudnn_convolution", ["scudnn_128x64_relu_interior_nn_v1"], "cuDNN"),
        ("aten::mm", ["Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_SN", "x"], "Tensile"),
        ("aten::mm", ["cijk_lowercase"], None),  # kernel rules are case-sensitive
    ],
)
def test_library_classification(name: str, kernels: list[str], library: str | None) -> None:
    assert classify_library(name, kernels) == library


def test_launcher_path_fallbacks() -> None:
    modules = ["Model", "Encoder", "Layer", "Linear"]
    assert launcher_path("model.py(3): forward", modules, "CK") == "model.py(3): forward"
    assert launcher_path("Not found", modules, "CK") == "Model > Encoder > Layer"
    assert launcher_path(None, [], "CK") == "CK (vendor)"
    assert launcher_path("", [], None) == "Not found"


def test_kernel_names_args_and_call_chain() -> None:
    long = "k" * 80
    assert kernel_name(["a.py(1): f", "aten::mm", long]) == (long, "k" * 75 + "...")
    full, _ = kernel_name([["aten::a", "k1"], ["aten::b", "k2"]])
    assert full == "Kernel 1: k1<br>Kernel 2: k2"
    assert format_args([[512], [4, 8], [], []], ["float", "c10::BFloat16", "Scalar", ""]) == (
        "(512,) fp32<br>(4,8) bf16"
    )
    stack = ["nn.Module: Net", "torch/nn/modules/module.py(1): _call_impl", "x.py(2): f", "k"]
    assert call_chain(stack) == ["nn.Module: Net", "x.py(2): f"]


def test_operations_sorted_by_time_with_shares() -> None:
    metrics = score(frame(row("a", 1000.0), row("b", 3000.0)), META, "x")
    assert [op.name for op in metrics.operations] == ["b", "a"]
    assert [op.percent_of_category for op in metrics.operations] == [75.0, 25.0]
    assert metrics.operations[0].percent_of_total == 3.0
    assert (metrics.total_time_ms, metrics.percent_of_total, metrics.operation_count) == (
        4.0,
        4.0,
        2,
    )
    assert metrics.percent_of_compute is None  # the metadata gives no computation time


def test_concurrent_kernels_hold_at_most_the_whole_window() -> None:
    """120 + 30 ms of kernels on several streams in a 100 ms window: each share is at most
    100 %; the times keep the sums."""
    metrics = score(frame(row("a", 120_000.0), row("b", 30_000.0)), META, "x")
    a, b = metrics.operations
    assert (a.time_ms, a.percent_of_total, b.percent_of_total) == (120.0, 100.0, 30.0)
    assert (metrics.total_time_ms, metrics.percent_of_total) == (150.0, 100.0)


def test_a_judged_window_lowers_the_floor_on_unrounded_savings() -> None:
    """A 10,000 ms window of which 200 ms is judged (the rest warm-up idle): 0.5 % of the
    judged window is 1 ms of mid saving. 4 ms of unmodelled kernels save 1.2 ms at mid (kept),
    3 ms save 0.9 ms (dropped); against the whole window neither reaches 0.5 %."""
    conv = heuristic("conv", 0.04).model_copy(update={"time_ms": 4.0})
    bn = heuristic("bn", 0.03).model_copy(update={"time_ms": 3.0})
    assert category_findings([conv, bn]) == ()
    found = category_findings([conv, bn], judged_ms=200.0)
    assert [f.members[0].operation for f in found] == ["conv"]


def test_percent_of_compute_is_a_share_of_computation_time() -> None:
    """4 ms of kernels in a 100 ms window whose computation time is 40 ms: the category holds
    3.8 ms of it (0.8 + 3.0, its kernels overlapping others), 9.5 % of compute; 4 % of E2E."""
    meta = category_metadata(util={"total_time_ms": 100.0, "computation_time_percent": 40.0})
    ops = frame(
        row("a", 1000.0, **{"Computation Time (µs)_sum": 800.0}),
        row("b", 3000.0, **{"Computation Time (µs)_sum": 3000.0}),
    )
    metrics = score(ops, meta, "x")
    assert (metrics.percent_of_compute, metrics.percent_of_total) == (9.5, 4.0)
    assert metrics.document()["percent_of_compute"] == 9.5


def test_other_drops_communication_only_for_other() -> None:
    ops = frame(row("c10d::allgather_", pct=None), row("aten::nonzero", pct=None))
    mine = analyze_category("other", ops, META, {})
    assert [op.name for op in mine.operations] == ["aten::nonzero"]
    assert mine.category_specific["communication_ops_skipped"]["count"] == 1
    assert mine.category_specific["communication_count"] == 0
    kept = analyze_category("customcollective", ops, META, {})
    assert kept.category_specific["communication_count"] == 1
    assert "communication_ops_skipped" not in kept.category_specific


def test_analyze_and_write_roundtrip(tmp_path: Path) -> None:
    metrics = analyze_category("gemm", frame(row("aten::mm", 20_000.0, 50.0)), META, {})
    path = RunFolder(tmp_path).write_metrics("gemm", metrics)
    doc = json.loads(path.read_text())
    assert path == tmp_path / layout.metrics("gemm")
    assert path.name == "gemm_metrics.json" and doc["status"] == "OK"
    assert doc == metrics.document()
    assert doc["category_findings"][0]["impact_score"] == 8.75
    assert doc["category_specific"]["missing_perf_model_count"] == 1
    assert sorted(p.name for p in path.parent.iterdir()) == ["gemm_metrics.json"]


def test_blank_text_cells_count_as_missing() -> None:
    """As in the CSV the analysis once read: an empty Compute Spec is no perf model."""
    blank = frame(row("aten::mm", 20_000.0, 50.0, **{"Compute Spec": ""}))
    assert analyze_category("gemm", blank, META, {}) == analyze_category(
        "gemm", frame(row("aten::mm", 20_000.0, 50.0, **{"Compute Spec": None})), META, {}
    )


def test_bad_inputs_give_status_documents() -> None:
    assert analyze_category("gemm", None, META, {}).document()["status"] == "ERROR"
    assert analyze_category("gemm", frame(row()), None, {}).status == "ERROR"
    assert analyze_category("cpu_idle", frame(row()), META, {}).status == "ERROR"
    assert analyze_category("../etc", frame(row()), META, {}).status == "ERROR"
    no_data = analyze_category("moe_fused", None, None, {}).document()
    assert no_data["status"] == "NO_DATA" and "category_findings" not in no_data
    assert category_for("ssm_fwd") is not None and category_for("kernel_fusion") is None
