"""GPU-only traces: compute categories from kernel names (docs/analysis.md#gpu-only-categories)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.perf.categories import default_table
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.category_data import prepare
from rooflens.analyzers.prepare.kernel_rows import NOTE, kernel_rows
from rooflens.analyzers.report.build import build_report
from tests.helpers.trace_builder import TraceBuilder


@pytest.mark.parametrize(
    ("kernel", "category"),
    [
        ("Cijk_Ailk_Bljk_BBS_BH_MT128x128x32", "GEMM"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32", "GEMM"),
        ("nvjet_tst_128x256_64x4_2x1_v_bz_coopA_TNT", "GEMM"),
        ("ampere_bf16_s16816gemm_bf16_128x128_ldg8", "GEMM"),
        ("igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1", "CONV_fwd"),
        ("igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1", "CONV_bwd"),
        ("igemm_bwd_gtcx2_nhwc_bf16_bx0_ex1", "CONV_bwd"),
        ("cudnn::detail::implicit_convolve_sgemm", "CONV_fwd"),
        ("void convert_fp8_kernel", "other"),  # `convert` is no convolution
        ("flash_fwd_kernel<Flash_fwd_kernel_traits>", "SDPA_fwd"),
        ("fmha_bwd_hd128_bf16", "SDPA_bwd"),
        ("void at::native::batch_norm_backward_kernel<float>", "NORM_bwd"),
        ("void at::native::batch_norm_collect_statistics_kernel<float>", "NORM_fwd"),
        ("void at::native::reduce_kernel<512, 1>", "reduce"),
        ("void cunn_SoftMaxForward<4>", "reduce"),
        ("void at::native::vectorized_elementwise_kernel<8, add>", "elementwise"),
        ("batched_transpose_16x64_pack_1x4_ediv_1x2_half", "elementwise"),
        ("SubTensorOpWithScalar1d", "elementwise"),
        ("triton_poi_fused_add_0", "triton"),
        ("void at::native::multi_tensor_apply_kernel<ForeachAdd<float>>", "multi_tensor_apply"),
        ("multi_tensor_apply_kernel<at::native::LpNormFunctor<float>>", "multi_tensor_apply"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "communication"),
        ("__amd_rocclr_copyBuffer", "copy"),
    ],
)
def test_kernel_name_rules(kernel: str, category: str) -> None:
    assert default_table().kernel_category(kernel) == category


def gpu_only_events(tb: TraceBuilder) -> list[dict]:
    """Three kernels launched from runtime calls only (no cpu_op): two GEMMs overlapping by
    5 µs on two streams, one elementwise kernel, and a memset."""
    return [
        *tb.launch(1, 0, 100, 20, "Cijk_Ailk_Bljk_MT64"),
        *tb.launch(2, 5, 115, 20, "Cijk_Ailk_Bljk_MT64", 8),
        *tb.launch(3, 10, 140, 10, "void at::native::vectorized_elementwise_kernel<4>"),
        tb.runtime("hipMemsetAsync", 15, 4, 4),
        tb.kernel("Memset (Device)", 160, 6, 4, cat="gpu_memset"),
    ]


def test_gpu_only_trace_gets_categories_that_add_up(tmp_path: Path) -> None:
    tb = TraceBuilder(tmp_path)
    model = tb.model(gpu_only_events(tb))
    rows = kernel_rows(model, default_table())
    assert rows["name"].tolist() == ["Cijk_Ailk_Bljk_MT64", rows["name"].iloc[1]]
    assert rows["op category"].tolist() == ["GEMM", "elementwise"]
    assert rows["operation_count"].tolist() == [2, 1]
    assert rows["Kernel Time (µs)_sum"].tolist() == [40.0, 10.0]
    assert rows["Computation Time (µs)_sum"].tolist() == [35.0, 10.0]  # the union of the two
    platform = get_platform("MI300X")
    report = build_report(model, platform)
    assert report.unified is None
    data = prepare(model, report, platform, "t.json", str(tmp_path))
    compute = {c.name: c for c in data.manifest.categories if c.tier == "compute_kernel"}
    assert {k: c.gpu_kernel_time_ms for k, c in compute.items()} == {
        "gemm": 0.035,
        "elementwise": 0.01,
    }
    assert NOTE in (data.manifest.notes or [])
