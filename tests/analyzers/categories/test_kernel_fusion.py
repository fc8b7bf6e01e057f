"""kernel_fusion_metrics (§3.12.3 standalone): gates, savings, confidence, documents."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from rooflens.analyzers.categories.kernel_fusion import (
    NO_PLATFORM_WARNING,
    Peaks,
    PerfLookup,
    analyze_kernel_fusion,
    classify_confidence,
    estimate,
    prefilter,
)
from rooflens.analyzers.categories.system_inputs import SystemInputs
from rooflens.analyzers.perf.platforms import Platform, get_platform
from tests.helpers.pipeline_runs import candidate, manifest, system_inputs

PEAKS = Peaks(hbm_tbs=1.0, matrix_tflops=1000.0, vector_tflops=100.0)
GEMM = "sm90_xmma_gemm_bf16"
GELU = "vectorized_elementwise_kernel<gelu>"
NORM = "rmsnorm2d_fwd_kernel"


def row(kernel: str, moved: float | None = 1.0, spec: str = "vector_bf16", gflops=0.0) -> dict:
    return {
        "name": f"op_{kernel}",
        "op category": "GEMM" if spec.startswith("matrix") else "elementwise",
        "Input Dims": "[[4,8]]",
        "Data Moved (MB)": moved,
        "GFLOPS": gflops,
        "Compute Spec": spec,
        "kernel_details_summary": json.dumps([{"name": kernel}]),
    }


def summary(*extra: dict) -> pd.DataFrame:
    rows = [row(GEMM, 4.0, "matrix_bf16", 1.0), row(GELU), row(NORM), *extra]
    rows += [row(f"ew_{i}") for i in range(6)]
    return pd.DataFrame(rows)


LOOKUP = PerfLookup(summary())


def kernel(name: str, dur: float, kind: str = "Elementwise") -> dict:
    return {"name": name, "type": kind, "dur_us": dur, "eligible": True, "gpu_op_uid": 0}


def gemm(dur: float) -> dict:
    return kernel(GEMM, dur, "GEMM")


def cand(kernels: list[dict], instances: int = 1, name: str = "Block", **extra):
    per = sum(k["dur_us"] for k in kernels)
    return candidate(
        {
            "module_name": f"nn.Module: {name}_0",
            "base_name": name,
            "instance_count": instances,
            "kernel_count": len(kernels),
            "kernels": kernels,
            "has_fused_kernel": False,
            "total_kernel_time_us": per * instances,
            "input_dims": None,
            **extra,
        }
    )


def test_gemm_epilogue_saves_the_trailing_kernels():
    c = cand([gemm(100), kernel(GELU, 50), gemm(100)], instances=10, name="Qwen2MLP")
    e = estimate(c, LOOKUP, PEAKS, baseline_ms=10.0)
    assert e is not None
    # savings 50 of 250 µs per instance; 2.5 ms of 10 ms -> 0.2 x 25 %
    assert e.impact_score_high == pytest.approx(5.0)
    assert e.impact_score == pytest.approx(4.38)  # 0.875 x 5.0, rounded
    assert e.impact_score_low == pytest.approx(3.75)
    assert (e.bound_type, e.fusion_type, e.estimation) == ("compute", "matrix_compute", "full")
    assert e.time_ms == pytest.approx(2.5) and e.modeled_kernel_count == 3
    assert e.confidence == "high"  # name `mlp` + 2 matrix ops with a non-matrix one


def test_an_estimate_records_what_the_instances_really_took():
    """Ten instances of a 250 µs first instance: 2.5 ms reckoned; they took 1.2 ms."""
    kernels = [gemm(100), kernel(GELU, 50), gemm(100)]
    c = cand(kernels, instances=10, name="Qwen2MLP", measured_kernel_time_us=1200.0)
    e = estimate(c, LOOKUP, PEAKS, baseline_ms=10.0)
    assert e is not None and e.time_ms == pytest.approx(2.5)  # TraceLens's reckoning, kept
    assert e.impact_score_high == pytest.approx(5.0)
    assert e.measured_time_ms == 1.2
    same = cand(kernels, instances=10, name="Qwen2MLP", measured_kernel_time_us=2500.0)
    assert estimate(same, LOOKUP, PEAKS, baseline_ms=10.0).measured_time_ms is None


def test_elementwise_chain_uses_the_roofline_projection():
    c = cand([kernel("ew_0", 100), kernel("ew_1", 100), kernel("ew_2", 100)], name="chain")
    e = estimate(c, LOOKUP, PEAKS, baseline_ms=10.0)
    # fused kernel moves 0.5 MB in + 0.5 MB out at 1 TB/s = 1 µs: 299 of 300 µs saved
    assert e is not None and e.bound_type == "memory" and e.fusion_type == "memory_bound"
    assert e.impact_score_high == pytest.approx(299 / 300 * 0.3 / 10 * 100, abs=0.01)
    assert e.confidence == "medium"  # composition (>= 3 non-matrix kernels) only


def test_data_in_out_of_the_candidate_kernels_drive_the_external_bytes():
    first = kernel("ew_0", 100) | {"data_in_mb": 50.0, "data_out_mb": 0.5}
    last = kernel("ew_1", 100) | {"data_in_mb": 0.5, "data_out_mb": 50.0}
    e = estimate(cand([first, last], name="chain"), LOOKUP, PEAKS, baseline_ms=1.0)
    # 100 MB at 1 TB/s = 100 µs fused: 100 of 200 µs saved
    assert e.impact_score_high == pytest.approx(100 / 200 * 0.2 / 1.0 * 100)


def test_prefilter_kernel_count_limit_is_15():
    ks = [kernel("ew_0", 100)]
    at_limit = cand(ks * 15, name="a")
    over = cand(ks * 16, name="b")
    assert [c.base_name for c in prefilter([at_limit, over], baseline_ms=1.0)] == ["a"]


def test_prefilter_needs_2_percent_of_e2e():
    # baseline 10 ms -> floor 10 x 10 x 2.0 = 200 µs
    enough = cand([kernel("ew_0", 100), kernel("ew_1", 100)], name="a")
    short = cand([kernel("ew_0", 100), kernel("ew_1", 99.9)], name="b")
    assert [c.base_name for c in prefilter([enough, short], baseline_ms=10.0)] == ["a"]


def test_prefilter_dedups_by_shape_keeping_the_shorter_module_name():
    ks = [kernel("ew_0", 100), kernel("ew_1", 100)]
    long = dataclasses.replace(cand(ks, name="a"), module_name="model.py(12): a_long_frame_name")
    short = cand(ks, name="b")
    assert [c.base_name for c in prefilter([long, short], baseline_ms=1.0)] == ["b"]


def test_savings_below_a_tenth_of_a_millisecond_are_dropped():
    low = cand([gemm(10), kernel(GELU, 9.9)], instances=10)  # 0.099 ms saved
    high = cand([gemm(10), kernel(GELU, 10.1)], instances=10)  # 0.101 ms saved
    assert estimate(low, LOOKUP, PEAKS, baseline_ms=1.0) is None
    assert estimate(high, LOOKUP, PEAKS, baseline_ms=1.0) is not None


def test_high_impact_score_must_reach_2_percent():
    # gemm 100 + gelu X, one instance, baseline 10 ms: high score = X / 100
    assert estimate(cand([gemm(100), kernel(GELU, 199)]), LOOKUP, PEAKS, 10.0) is None
    e = estimate(cand([gemm(100), kernel(GELU, 201)]), LOOKUP, PEAKS, 10.0)
    assert e is not None and e.impact_score_high == pytest.approx(2.01)


@pytest.mark.parametrize(
    ("kernel_count", "modelled", "kept"),
    [(4, 2, True), (4, 1, False), (5, 4, True), (5, 3, False)],
)
def test_coverage_gate_half_below_five_kernels_else_three_quarters(kernel_count, modelled, kept):
    ks = [kernel(f"ew_{i}", 100) for i in range(modelled)]
    ks += [kernel(f"unmodelled_{i}", 1) for i in range(kernel_count - modelled)]
    e = estimate(cand(ks), LOOKUP, PEAKS, baseline_ms=1.0)
    assert (e is not None) == kept
    if e is not None and modelled < kernel_count:
        assert e.estimation == "partial"
        assert e.warning.startswith(f"{kernel_count - modelled} of {kernel_count} kernels lack")


@pytest.mark.parametrize(
    "kernels",
    [
        [kernel(GELU, 500)],  # fewer than two kernels
        [gemm(500), gemm(500)],  # all matrix ops
        [gemm(500), kernel(NORM, 500, "Normalization")],  # GEMM + norm only
        [kernel("triton_poi_fused_0", 500), kernel(GELU, 500)],  # Triton already fused
        [kernel("nothing_known_a", 500), kernel("nothing_known_b", 500)],  # nothing modelled
    ],
)
def test_candidates_that_are_not_estimated(kernels):
    assert estimate(cand(kernels), LOOKUP, PEAKS, baseline_ms=1.0) is None


def test_already_fused_candidates_are_not_estimated():
    c = cand([gemm(100), kernel(GELU, 500)], has_fused_kernel=True)
    assert estimate(c, LOOKUP, PEAKS, baseline_ms=1.0) is None


@pytest.mark.parametrize(
    ("name", "names", "matrix", "confidence"),
    [
        ("LlamaAttention", ["q", "softmax", "v"], [True, False, True], "high"),
        ("LlamaAttention", ["a", "b"], [False, False], "medium"),  # name only
        ("Block", ["x", "rsqrt_kernel"], [False, False], "medium"),  # composition only
        ("Block", ["a", "b"], [False, False], "low"),
        ("apply_rope", ["neg_kernel", "CatArrayBatchedCopy"], [False, False], "high"),
        ("Mixer", ["a", "b", "c"], [False, False, False], "medium"),  # elementwise chain
    ],
)
def test_confidence(name, names, matrix, confidence):
    assert classify_confidence(name, names, matrix) == confidence


# the platform whose roofline the estimates use: PEAKS's bandwidth and vector roof
TEST_PLATFORM = Platform(name="H100-test", mem_bw_gbps=1000.0, peak_tflops={"vector_bf16": 100.0})


def make_run(candidates, baseline_ms=10.0, unified=True, platform=TEST_PLATFORM) -> SystemInputs:
    return system_inputs(
        manifest({"total_time_ms": baseline_ms}, platform=platform.name),
        fusion_candidates=candidates,
        unified=summary() if unified else None,
        platform=platform,
    )


def test_analyze_gives_ok_document_with_high_confidence_map():
    mlp = cand([gemm(100), kernel(GELU, 50), gemm(100)], instances=10, name="Qwen2MLP")
    chain = cand([kernel("ew_0", 100), kernel("ew_1", 100), kernel("ew_2", 100)], name="c")
    doc = analyze_kernel_fusion(make_run([chain, mlp])).model_dump(mode="json")
    assert doc["status"] == "OK" and doc["candidate_count"] == 2
    assert doc["estimated_count"] == 2 and doc["peak_hbm_bw_tbs"] == 1.0
    assert doc["platform"] == "H100-test"
    assert [e["operation"] for e in doc["impact_estimates"]] == ["Qwen2MLP", "c"]
    assert doc["total_time_ms"] == pytest.approx(2.8)
    assert doc["total_impact_score"] == pytest.approx(
        sum(e["impact_score"] for e in doc["impact_estimates"])
    )
    assert doc["high_confidence_kernel_map"] == {GEMM: "Qwen2MLP", GELU: "Qwen2MLP"}
    assert "warnings" not in doc and "error" not in doc


def test_peaks_come_from_the_run_platform():
    chain = cand([kernel("ew_0", 100), kernel("ew_1", 100), kernel("ew_2", 100)], name="c")
    mi300x = get_platform("MI300X")
    doc = analyze_kernel_fusion(make_run([chain], platform=mi300x))
    assert doc.status == "OK" and doc.platform == "MI300X"
    assert doc.peak_hbm_bw_tbs == mi300x.mem_bw() / 1000 and doc.peak_hbm_bw_tbs > 1.0
    # a faster memory makes the fused kernel cheaper: a larger saving than at 1 TB/s
    slow = analyze_kernel_fusion(make_run([chain]))
    assert doc.impact_estimates and slow.impact_estimates
    assert doc.impact_estimates[0].impact_score_high > slow.impact_estimates[0].impact_score_high


def test_no_data_when_nothing_survives_the_prefilter():
    tiny = cand([kernel("ew_0", 1), kernel("ew_1", 1)])
    doc = analyze_kernel_fusion(make_run([tiny])).model_dump(mode="json")
    assert doc == {
        "category": "kernel_fusion",
        "status": "NO_DATA",
        "candidate_count": 0,
        "impact_estimates": [],
    }


def test_errors_for_missing_inputs():
    doc = analyze_kernel_fusion(make_run([], unified=False)).model_dump(mode="json")
    assert doc["status"] == "ERROR" and "unified_perf_summary" in doc["error"]
    assert set(doc) == {"category", "status", "error"}
    chain = cand([kernel("ew_0", 100), kernel("ew_1", 100)], name="c")
    doc = analyze_kernel_fusion(make_run([chain], baseline_ms=0.0)).model_dump(mode="json")
    assert doc["status"] == "ERROR" and "total_time_ms) is not positive" in doc["error"]
    assert set(doc) == {"category", "status", "error"}


# --- no platform known: estimates by measured time only (docs/analysis.md#without-a-platform)

NO_PEAKS = Peaks(hbm_tbs=None, matrix_tflops=None, vector_tflops=None)


def test_without_a_platform_a_chain_is_projected_at_the_bandwidth_it_achieved():
    c = cand([kernel("ew_0", 100), kernel("ew_1", 100), kernel("ew_2", 100)], name="chain")
    e = estimate(c, LOOKUP, NO_PEAKS, baseline_ms=5.0)
    # each kernel moves 1 MB in 100 µs (0.01 MB/µs); the fused one moves 0.5 MB in and 0.5 MB
    # out at that rate: 100 µs, so 200 of 300 µs are saved; 0.3 ms of 5 ms -> 2/3 x 6 %
    assert e is not None and e.bound_type == "memory" and e.warning == NO_PLATFORM_WARNING
    assert e.impact_score_high == pytest.approx(4.0)
    assert e.impact_score_low == pytest.approx(3.0)


def test_without_a_platform_an_epilogue_saves_its_kernels_time_as_always():
    c = cand([gemm(100), kernel(GELU, 50), gemm(100)], instances=10, name="Qwen2MLP")
    with_roof = estimate(c, LOOKUP, PEAKS, baseline_ms=10.0)
    by_time = estimate(c, LOOKUP, NO_PEAKS, baseline_ms=10.0)
    assert by_time is not None and with_roof is not None
    assert by_time.impact_score_high == with_roof.impact_score_high == pytest.approx(5.0)
    assert by_time.warning is None  # nothing was projected


def test_without_a_platform_the_document_has_no_roof_and_says_how_it_estimated():
    chain = cand([kernel("ew_0", 100), kernel("ew_1", 100), kernel("ew_2", 100)], name="c")
    inputs = dataclasses.replace(make_run([chain], baseline_ms=5.0), platform=None)
    doc = analyze_kernel_fusion(inputs).model_dump(mode="json")
    assert doc["status"] == "OK" and doc["estimated_count"] == 1
    assert "platform" not in doc and "peak_hbm_bw_tbs" not in doc  # absent, never 0
    assert doc["impact_estimates"][0]["impact_score_high"] == pytest.approx(4.0)
    assert doc["warnings"] == [NO_PLATFORM_WARNING]
