"""Fused inference kernels (RoPE, fused RMSNorm, act-and-mul, fp8 quant): hand counts.

Argument layouts are the ones recorded in the shared b200 and SGLang traces.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.fused import MODELS

BF16, FP8, LONG = "c10::BFloat16", "c10::Float8_e4m3fn", "long int"
N = 888 * 2880  # 2,557,440 hidden elements


def work(name: str, dims, types, concrete=None):
    concrete = concrete or [""] * len(dims)
    return MODELS[name].forward(OpArgs(name, tuple(dims), tuple(types), (), tuple(concrete)))


def rope(name: str, q, k, head: str, cache):
    return work(
        name,
        [(q[0],), q, k, (), cache, ()],
        [LONG, BF16, BF16 if k else "", "Scalar", BF16, "Scalar"],
        ["", "", "", head, "", "True"],
    )


def test_vllm_rope_rotates_q_and_k_in_place_and_reads_cache_rows() -> None:
    w = rope("_C::rotary_embedding", (888, 512), (888, 64), "64", (131072, 64))
    # R = 888·(512 + 64) = 511,488: 3R FLOPs; 2R·2 + 888·64·2 (cache) + 888·8 (positions)
    assert (w.flops, w.bytes) == (1_534_464, 2_045_952 + 113_664 + 7_104)
    assert w.compute_spec == "vector_bf16"


def test_sglang_rope_has_the_same_layout() -> None:
    w = rope("sgl_kernel::rotary_embedding", (32, 4096), (32, 1024), "128", (41216, 128))
    assert (w.flops, w.bytes) == (3 * 163_840, 2 * 163_840 * 2 + 32 * 128 * 2 + 32 * 8)


def test_partial_rope_touches_only_rot_dim_of_each_head_and_key_is_optional() -> None:
    w = rope("vllm::rotary_embedding", (4, 256), (), "128", (100, 64))
    # 2 heads of 128, 64 rotated each: 4·2·64 = 512 elements
    assert (w.flops, w.bytes) == (1_536, 2 * 512 * 2 + 4 * 64 * 2 + 4 * 8)


def test_fused_add_rms_norm_reads_and_rewrites_input_and_residual() -> None:
    w = work(
        "_C::fused_add_rms_norm",
        [(888, 2880), (888, 2880), (2880,), ()],
        [BF16, BF16, BF16, "Scalar"],
    )
    # N (add) + 888·(2·2880 + 2) + 2N; 4N·2 + 2880·2
    assert (w.flops, w.bytes) == (N + 888 * 5_762 + 2 * N, 4 * N * 2 + 5_760)


def test_rms_norm_out_first_reads_input_and_weight() -> None:
    w = work("_C::rms_norm", [(888, 2880), (888, 2880), (2880,), ()], [BF16, BF16, BF16, "Scalar"])
    assert (w.flops, w.bytes) == (888 * 5_762 + 2 * N, 2 * N * 2 + 5_760)


def test_silu_and_mul_reads_two_halves_and_writes_one() -> None:
    w = work("sgl_kernel::silu_and_mul", [(32, 12288), (32, 24576)], [BF16, BF16])
    # 393,216 outputs: (silu 4 + mul 1) each; read 2·393,216·2, write 393,216·2
    assert (w.flops, w.bytes) == (1_966_080, 3 * 393_216 * 2)
    assert set(w.params) == {"op_shape", "dtype_in_out", "stride_input", "stride_output"}


def test_gelu_and_mul_finds_the_input_whichever_comes_first() -> None:
    w = work("aiter::gelu_and_mul", [(4, 16), (4, 8)], [BF16, BF16])
    assert (w.flops, w.bytes) == (9 * 32, 3 * 32 * 2)


def test_act_and_mul_without_a_double_width_input_is_unsupported() -> None:
    with pytest.raises(Unsupported):
        work("_C::silu_and_mul", [(4, 8), (4, 8)], [BF16, BF16])


def test_static_fp8_quant_reads_bf16_and_writes_one_byte() -> None:
    w = work("_C::static_scaled_fp8_quant", [(888, 512), (888, 512), ()], [FP8, BF16, "float"])
    # 454,656 elements: scale + saturate; N·2 in, N·1 out, one fp32 scale
    assert (w.flops, w.bytes) == (909_312, 454_656 * 3 + 4)
    assert w.compute_spec == "vector_bf16"


def test_dynamic_fp8_quant_reads_the_input_twice() -> None:
    w = work("_C::dynamic_scaled_fp8_quant", [(888, 512), (888, 512), ()], [FP8, BF16, "float"])
    assert (w.flops, w.bytes) == (4 * 454_656, 454_656 * 5 + 4)


def test_per_token_fp8_quant_writes_one_scale_per_token() -> None:
    w = work(
        "_C::dynamic_per_token_scaled_fp8_quant",
        [(888, 512), (888, 512), (888, 1), ()],
        [FP8, BF16, "float", ""],
    )
    assert (w.flops, w.bytes) == (4 * 454_656, 454_656 * 3 + 888 * 4)


def test_aiter_rmsnorm_has_the_out_input_weight_layout() -> None:
    """(4, 8) rows, weight (8,): N = 32, C = 8, E = 4. FLOPs = E·(2C + 2) + 2N = 72 + 64;
    bytes = N read + N written + C weight = (32 + 32 + 8)·2."""
    w = work("aiter::rmsnorm", [(4, 8), (4, 8), (8,), ()], [BF16, BF16, BF16, "Scalar"])
    assert (w.flops, w.bytes) == (136, 144)


def test_aiter_add_rmsnorm_reads_input_and_residual_and_writes_both_outputs() -> None:
    """(out, input, residual_in, residual_out, weight, eps): FLOPs = N (add) + 136 = 168;
    bytes = 4·N·2 + C·2 = 256 + 16."""
    dims = [(4, 8)] * 4 + [(8,), ()]
    w = work("aiter::add_rmsnorm", dims, [BF16] * 5 + ["Scalar"])
    assert (w.flops, w.bytes) == (168, 272)
    with pytest.raises(Unsupported):
        work("aiter::add_rmsnorm", [(4, 8)] * 3 + [(2, 8), (8,), ()], [BF16] * 5 + ["Scalar"])
