"""SDPA perf models (perf_report.md §6.6): hand-counted FLOPs and bytes, causal masks, fixes."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.sdpa import MODELS, OPS, causal_pairs

BF16, FP32, FP8 = "c10::BFloat16", "float", "c10::Float8_e4m3fn"
ATEN_FLASH = "aten::_scaled_dot_product_flash_attention"
ATEN_EFFICIENT = "aten::_scaled_dot_product_efficient_attention"
FA_FWD, FA_BWD = "flash_attn::_flash_attn_forward", "flash_attn::_flash_attn_backward"


def aten_flash(q, k, v, causal="False", dtype=BF16):
    """aten::_scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, debug, scale)."""
    dims = (q, k, v, (), (), (), ())
    types = (dtype, dtype, dtype, "Scalar", "Scalar", "Scalar", "Scalar")
    return OpArgs(ATEN_FLASH, dims, types, (), ("", "", "", "0.", causal, "False", "0.125"))


def flash_attn_fwd(q, k, v, causal="False", name=FA_FWD, dtype=BF16):
    """flash_attn::_flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, ...)."""
    dims = (q, k, v, (), (), (), (), (), (), ())
    types = (dtype, dtype, dtype, *("Scalar",) * 7)
    concrete = ("", "", "", "0.0", "0.125", causal, "-1", "-1", "0.0", "False")
    strides = tuple(_contiguous(s) for s in (q, k, v)) + ((),) * 7
    return OpArgs(name, dims, types, strides, concrete)


def _contiguous(shape):
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= size
    return tuple(reversed(out))


def fwd(args):
    return MODELS[args.name].forward(args)


def test_aten_flash_causal_worked_example_from_the_spec():
    shape = (16, 16, 559, 64)  # B, H, N, d
    w = fwd(aten_flash(shape, shape, shape, causal="True"))
    assert w.flops == 10_239_377_408  # 4·16·16·559²·64 / 2 (square: exactly halved)
    assert w.flops / 1e9 == pytest.approx(10.239377408, rel=1e-12)
    assert w.bytes == 4 * 16 * 16 * 559 * 64 * 2  # 73,269,248 B = 69.875 MiB
    assert (w.unit, w.compute_spec) == ("matrix", "matrix_bf16")
    assert w.params == {
        "B": 16,
        "N_Q": 559,
        "H_Q": 16,
        "N_KV": 559,
        "H_KV": 16,
        "d_h_qk": 64,
        "d_h_v": 64,
        "dropout": 0.0,
        "causal": True,
        "flash_impl": True,
        "dtype_A_B": (BF16, BF16),
    }


def test_aten_flash_non_causal_is_the_full_rectangle():
    shape = (4, 12, 197, 64)
    w = fwd(aten_flash(shape, shape, shape))
    assert w.flops == 4 * 4 * 12 * 197 * 197 * 64  # 476,884,992
    assert w.params["causal"] is False


@pytest.mark.parametrize("n_q", range(1, 9))
@pytest.mark.parametrize("n_kv", range(1, 9))
def test_causal_pairs_match_a_brute_force_count_of_the_mask(n_q, n_kv):
    shift = n_kv - n_q  # bottom-right: query i sees keys j <= i + N_KV - N_Q
    bottom_right = sum(1 for i in range(n_q) for j in range(n_kv) if j <= i + shift)
    top_left = sum(1 for i in range(n_q) for j in range(n_kv) if j <= i)  # ones().tril()
    assert causal_pairs(n_q, n_kv, bottom_right=True) == bottom_right
    assert causal_pairs(n_q, n_kv, bottom_right=False) == top_left


def test_flash_attn_causal_prefill_chunk_counts_rectangle_minus_triangle():
    # flash-attn docstring mask for N_Q=2, N_KV=5: [1 1 1 1 0; 1 1 1 1 1] -> 9 pairs
    w = fwd(flash_attn_fwd((1, 2, 1, 4), (1, 5, 1, 4), (1, 5, 1, 4), causal="True"))
    assert w.flops == 2 * 9 * 4 + 2 * 9 * 4  # 144; TraceLens raises (N_Q != N_KV)


def test_flash_attn_causal_more_queries_than_keys_masks_the_leading_rows():
    # N_Q=5, N_KV=2: rows 0-2 see nothing, then 1 and 2 keys -> 3 pairs
    w = fwd(flash_attn_fwd((1, 5, 1, 4), (1, 2, 1, 4), (1, 2, 1, 4), causal="True"))
    assert w.flops == 2 * 3 * 4 * 2  # 48


def test_flash_attn_causal_decode_step_sees_every_cached_key():
    w = fwd(flash_attn_fwd((2, 1, 8, 64), (2, 100, 8, 64), (2, 100, 8, 64), causal="True"))
    assert w.flops == 4 * 2 * 8 * 1 * 100 * 64  # bottom-right: nothing is masked


def test_aten_causal_non_square_is_aligned_top_left_as_pytorch():
    short_q = fwd(aten_flash((1, 1, 2, 4), (1, 1, 5, 4), (1, 1, 5, 4), causal="True"))
    assert short_q.flops == 4 * 3 * 4  # rows see 1, 2 keys -> 3 pairs
    long_q = fwd(aten_flash((1, 1, 5, 4), (1, 1, 2, 4), (1, 1, 2, 4), causal="True"))
    assert long_q.flops == 4 * 9 * 4  # 1 + 2 + 2 + 2 + 2 = 9 pairs


@pytest.mark.parametrize(("dtype", "size"), [(FP32, 4), (FP8, 1), (BF16, 2)])
def test_bytes_use_the_real_element_size(dtype, size):
    shape = (1, 2, 8, 16)  # 256 elements per tensor
    w = fwd(aten_flash(shape, shape, shape, dtype=dtype))
    assert w.bytes == 4 * 256 * size  # TraceLens: always 2 bytes


def test_gqa_backward_counts_recompute_gradients_and_head_reduction():
    # B=1, H_Q=4, H_KV=2, N=3, d_qk=4, d_v=2; scores = 36, group = 4 // 2 - 1 = 1
    q, k, v = (1, 3, 4, 4), (1, 3, 2, 4), (1, 3, 2, 2)
    args = flash_attn_fwd(q, k, v)
    model = MODELS[FA_FWD]
    assert model.bwd_category == "SDPA_bwd"
    assert fwd(args).flops == 2 * 36 * 4 + 2 * 36 * 2  # 432
    assert fwd(args).bytes == (48 + 24 + 12 + 24) * 2  # Q, K, V, O
    bwd = model.backward(args)
    # recompute 288 + dV (144 + 6) + dP 144 + dQ 288 + dK (288 + 12)
    assert bwd.flops == 1170
    assert bwd.bytes == (2 * 48 + 24) * 2 + 2 * 24 * 2 + 2 * 12 * 2  # Q,dO,dQ; K,dK; V,dV = 384


def test_efficient_attention_backward_does_not_recompute():
    shape = (1, 4, 3, 4)  # B, H, N, d
    dims = (shape, shape, shape, (), (), (), (), ())
    concrete = ("", "", "", "", "False", "0.0", "False", "")
    args = OpArgs(ATEN_EFFICIENT, dims, (BF16,) * 3 + ("",) * 5, (), concrete)
    model = MODELS[ATEN_EFFICIENT]
    assert fwd(args).params["flash_impl"] is False
    scores = 4 * 3 * 3
    assert model.backward(args).flops == 4 * 2 * scores * 4  # dV + dP + dQ + dK = 2× forward


def flash_attn_bwd(q, k, v, causal):
    """flash_attn::_flash_attn_backward(dout, q, k, v, out, lse, dq, dk, dv, dropout_p,
    softmax_scale, causal, ...)."""
    dims = (q, q, k, v, q, (1, 1), q, k, v, (), (), (), (), (), (), (), (), ())
    types = (BF16,) * 5 + (FP32,) + (BF16,) * 3 + ("Scalar",) * 9
    concrete = ("",) * 9 + ("0.1", "0.125", causal) + ("-1", "-1", "0.0", "", "False", "")
    return OpArgs(FA_BWD, dims, types, (), concrete)


def test_flash_attn_backward_reads_dropout_and_causal_at_their_real_positions():
    shape = (1, 4, 2, 8)  # B, N, H, d
    w = fwd(flash_attn_bwd(shape, shape, shape, causal="True"))
    assert (w.params["dropout"], w.params["causal"]) == (0.1, True)
    scores = 2 * 4 * 4
    assert w.flops == (5 * 2 * scores * 8) / 2  # recompute + 4 gradient GEMMs, halved
    assert w.params["dtype_A_B"] == (BF16, BF16)  # dout, q (as TraceLens)


def test_flash_attn_backward_causal_defaults_to_true_when_unrecorded():
    shape = (1, 4, 2, 8)
    assert fwd(flash_attn_bwd(shape, shape, shape, causal="")).params["causal"] is True


@pytest.mark.parametrize(("text", "causal"), [("True", True), ("true", True), ("1", True)])
def test_causal_flag_is_parsed_without_eval(text, causal):
    shape = (1, 4, 2, 8)
    assert fwd(flash_attn_fwd(shape, shape, shape, causal=text)).params["causal"] is causal


@pytest.mark.parametrize("text", ["__import__('os')", "0.125", "maybe"])
def test_unreadable_causal_flag_is_unsupported(text):
    shape = (1, 4, 2, 8)
    with pytest.raises(Unsupported, match="is not a bool"):
        fwd(flash_attn_fwd(shape, shape, shape, causal=text))


def test_flash_attn_params_carry_qkv_strides():
    shape = (1, 4, 2, 8)
    params = fwd(flash_attn_fwd(shape, shape, shape, name="FlashAttnFunc")).params
    assert params["q_stride"] == (64, 16, 8, 1)
    assert params["k_stride"] == params["v_stride"] == (64, 16, 8, 1)


def test_varlen_forward_is_a_lower_bound_over_packed_sequences():
    # T=10 tokens in 3 sequences (cu_seqlens has 4 entries), max_seqlen 6, H=2, d=8
    t = (10, 2, 8)
    dims = (t, t, t, (4,), (4,), (), (), (), (), (), (), ())
    types = (BF16,) * 3 + ("int", "int") + ("Scalar",) * 7
    concrete = ("",) * 5 + ("6", "6", "0.0", "0.125", "False", "-1", "-1")
    w = fwd(OpArgs("flash_attn::_flash_attn_varlen_forward", dims, types, (), concrete))
    # one sequence of 6 + two of (10 - 6) // 2 = 2 tokens; full = 4·H·n²·d = 64·n²
    assert w.flops == 64 * 36 + 2 * 64 * 4  # 2816
    assert w.bytes == 4 * 10 * 2 * 8 * 2
    assert (w.params["num_seqs_q"], w.params["max_seqlen_q"], w.params["B"]) == (3, 6, 1)


def test_varlen_backward_uses_the_backward_formula():
    t = (6, 1, 4)  # one sequence of 6 tokens
    dims = (t, t, t, t, t, (1, 6), t, t, t, (2,), (2,), *((),) * 9)
    concrete = ("",) * 11 + ("6", "6", "0.0", "0.5", "False") + ("",) * 4
    args = OpArgs("flash_attn::_flash_attn_varlen_backward", dims, (BF16,) * 20, (), concrete)
    w = fwd(args)
    assert w.flops == 5 * 2 * 36 * 4  # recompute + 4 gradient GEMMs
    assert w.bytes == 7 * 24 * 2


def test_aiter_flash_attn_backward_reads_q_k_v_after_dout():
    # dout and q are (B, N, H_Q, d); k and v have fewer (GQA) heads: reading q at 0 would fail
    q, kv = (1, 4, 4, 8), (1, 4, 2, 8)
    dims = (q, q, kv, kv, q, (1, 4, 4), q, kv, kv, (), *((),) * 11)
    concrete = ("",) * 10 + ("0.0", "0.125", "True") + ("",) * 8
    w = fwd(OpArgs("aiter::_flash_attn_backward", dims, (BF16,) * 21, (), concrete))
    assert (w.params["H_Q"], w.params["H_KV"], w.params["causal"]) == (4, 2, True)
    assert w.params["dtype_A_B"] == (BF16, BF16)  # TraceLens reports no dtype for aiter ops
    assert w.compute_spec == "matrix_bf16"


def test_aiter_fmha_v3_fwd_from_a_real_trace_signature():
    q = (1, 768, 24, 128)
    dims = (q, q, q, *((),) * 15)
    concrete = ("", "", "", "0.", "0.088388347648318447", "False", "-1", "-1", "True")
    concrete += ("False", "2") + ("",) * 7
    w = fwd(OpArgs("aiter::fmha_v3_fwd", dims, (BF16,) * 3 + ("Scalar",) * 15, (), concrete))
    assert w.flops == 4 * 24 * 768 * 768 * 128
    assert w.bytes == 4 * 768 * 24 * 128 * 2


def test_flash_attn_3_has_no_dropout_and_reads_causal_at_24():
    q = (1, 4, 2, 8)
    dims = (q, q, q, *((),) * 25)
    concrete = ("",) * 24 + ("True",) + ("",) * 3
    w = fwd(OpArgs("flash_attn_3::fwd", dims, (BF16,) * 28, (), concrete))
    assert (w.params["dropout"], w.params["causal"]) == (0.0, True)


def test_mismatched_qkv_shapes_are_unsupported():
    with pytest.raises(Unsupported, match="shapes disagree"):
        fwd(aten_flash((1, 2, 8, 16), (1, 2, 8, 32), (1, 2, 8, 16)))
    with pytest.raises(Unsupported, match="does not match layout"):
        fwd(aten_flash((2, 8, 16), (2, 8, 16), (2, 8, 16)))


def test_every_op_of_the_spec_table_is_modelled_with_the_right_direction():
    backward_ops = {name for name, op in OPS.items() if op.backward}
    assert backward_ops == {
        FA_BWD,
        "flash_attn::_flash_attn_varlen_backward",
        "aiter::_flash_attn_backward",
        "aiter::wrapper_fmha_v3_bwd",
        "aiter::mha_bwd",
    }
    for name, model in MODELS.items():
        if name in backward_ops:
            assert model.backward is None
        else:
            assert (model.backward is not None, model.bwd_category) == (True, "SDPA_bwd")
    assert len(MODELS) == 16
