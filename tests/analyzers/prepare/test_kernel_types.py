"""Our kernel-type rule table (§3.13): one literal name per rule family, threshold, fallback."""

from __future__ import annotations

import pytest

from rooflens.analyzers.prepare.kernel_types import (
    KERNEL_TYPE_RULES,
    KERNEL_TYPE_TO_PERF_CATEGORY,
    MIN_CONFIDENCE,
    classify_kernel,
)

CASES = [
    ("Memcpy DtoH (Device -> Pinned)", "MemCpy", "MemCpy"),
    ("Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT16x16x256_MI16x16x1", "GEMM", "GEMM"),
    ("wvSplitK_hf_sml_<__hip_bfloat16, 64, 2>", "GEMM", "GEMM"),
    ("nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN", "GEMM", "GEMM"),
    ("kernel_gemm_xdl_cshuffle_v3<GridwiseGemm>", "GEMM", "GEMM"),
    ("_gemm_a16_w16_kernel", "GEMM", "GEMM"),
    ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128>", "GEMM", "GEMM"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64", "GEMM", "GEMM"),
    ("my_custom_matmul_kernel", "GEMM", "GEMM"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int>", "GEMM", "GEMM"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits>", "Attention", "SDPA"),
    ("attn_fwd", "Attention", "SDPA"),
    ("fmha_fwd_d128_bf16", "Attention", "SDPA"),
    (
        "void at::native::vectorized_layer_norm_kernel<float, float>",
        "Normalization",
        "Normalization",
    ),
    ("rmsnorm2d_fwd_kernel", "Normalization", "Normalization"),
    ("MIOpenBatchNormFwdTrainSpatial", "Normalization", "Normalization"),
    ("triton_red_fused_add_mean_mul_pow_rsqrt_0", "Normalization", "Normalization"),
    (
        "void at::native::vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>",
        "Elementwise",
        "Elementwise",
    ),
    (
        "void at::native::unrolled_elementwise_kernel<CUDAFunctor_add<float>>",
        "Elementwise",
        "Elementwise",
    ),
    ("residual_add_kernel<bf16>", "Elementwise Add", "Others"),
    ("void hip_copy_kernel<bf16, float>", "Copy/Cast", "Others"),
    ("void (anonymous namespace)::softmax_warp_forward<bf16>", "Softmax", "Others"),
    ("void at::native::reduce_kernel<512, 1, ReduceOp<float, MeanOps>>", "Reduce", "Others"),
    ("rotary_embedding_kernel<bf16>", "Rotary Embedding", "Elementwise"),
    ("reshape_and_cache_flash_kernel", "KV Cache Store", "Elementwise"),
    ("fused_moe_kernel", "MoE GEMM", "GEMM-MoE"),
    ("moe_align_block_size_kernel", "MoE Routing", "Elementwise-MoE"),
    ("dynamic_per_token_scaled_fp8_quant_kernel", "Quantization", "Quantization"),
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1", "Conv", "Others"),
    ("implicit_gemm_conv_kernel", "Conv", "Others"),
    ("void cudnn::conv2d_grouped_direct_kernel", "Conv", "Others"),
]


@pytest.mark.parametrize(("name", "kernel_type", "perf_category"), CASES)
def test_rule_families(name: str, kernel_type: str, perf_category: str) -> None:
    found = classify_kernel(name)
    assert found[:2] == (kernel_type, perf_category)
    assert found[2] >= MIN_CONFIDENCE


def test_no_match_is_unknown_fallback() -> None:
    assert classify_kernel("indexSelectLargeIndex<bf16>") == ("Unknown", "Others", 0)
    assert classify_kernel("") == ("Unknown", "Others", 0)


def test_matches_below_min_confidence_are_unknown() -> None:
    # `norm` (3), `triton_` (2) and `rocprim` (1) match, but below the threshold of 5
    assert classify_kernel("some_norm_thing") == ("Unknown", "Others", 0)
    assert classify_kernel("triton_poi_fused_mul_silu_2") == ("Unknown", "Others", 0)
    assert classify_kernel("rocprim::detail::sort_kernel") == ("Unknown", "Others", 0)


def test_highest_priority_wins_over_generic_gemm() -> None:
    # `gemm` (5) and `layernorm` (18) both match: the norm rule wins
    assert classify_kernel("gemm_layernorm_epilogue")[0] == "Normalization"
    assert classify_kernel("memcpy_gemm_like")[0] == "MemCpy"


def test_torch_elementwise_wrappers_outrank_the_functor_they_carry() -> None:
    wrapped_copy = "void at::native::elementwise_kernel<128, 4, direct_copy_kernel_cuda>"
    wrapped_add = "void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<bf16>>"
    assert classify_kernel(wrapped_copy)[0] == "Elementwise"
    assert classify_kernel(wrapped_add)[0] == "Elementwise"


def test_every_rule_type_has_a_perf_category_entry_or_defaults() -> None:
    for rule in KERNEL_TYPE_RULES:
        assert isinstance(KERNEL_TYPE_TO_PERF_CATEGORY.get(rule.kernel_type, "Others"), str)
    assert len(KERNEL_TYPE_TO_PERF_CATEGORY) == 16
