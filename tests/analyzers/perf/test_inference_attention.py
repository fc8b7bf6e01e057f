"""Inference attention and KV-cache writes: hand-counted FLOPs and bytes.

The small case used throughout: H_q = 4, H_kv = 2, d = 8, bf16, two context requests with
(sq, sk) = (3, 4) and (5, 5): sq = 8, sk = 9, sqsq = 9 + 25 = 34, sqsk = 12 + 25 = 37.
Causal pairs by hand: request 1's queries see 2, 3, 4 keys (9), request 2's 1..5 (15): 24;
the formula sqsk − (sqsq − sq)/2 = 37 − 13 = 24 agrees.
FLOPs = 2·H_q·pairs·(d_qk + d_v) = 2·4·24·16 = 3,072.
Bytes = Q 8·4·8·2 = 512 + K,V 9·2·(8 + 8)·2 = 576 + O 8·4·8·2 = 512 = 1,600.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.categories.sdpa import workload_profile
from rooflens.analyzers.perf import registry
from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.inference_attention import (
    MODELS,
    Phase,
    parse_iteration,
    phases_for,
)

BF16, FP8, INT, LONG = "c10::BFloat16", "c10::Float8_e4m3fn", "int", "long int"
CONTEXT = "(sq8sk9sqsq34sqsk37)"
NO_PHASE = "(sq0sk0sqsq0sqsk0)"
GENERATION = "(sq2sk30sqsq2sqsk30)"  # two decode requests with 14 and 16 keys
PREFILL_ONLY = f"execute_8_context_2{CONTEXT}_generation_0{NO_PHASE}"
MIXED = f"execute_10_context_2{CONTEXT}_generation_2{GENERATION}"
FILL = "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>>"


def unified(rows: int, annotation: str, kernels: tuple[str, ...] = ()):
    name = "vllm::unified_attention_with_output"
    dims = ((rows, 4, 8), (rows, 2, 8), (rows, 2, 8), (rows, 4, 8), (), (), (), (0,))
    types = (BF16, BF16, BF16, BF16, "", "", "", BF16)
    args = OpArgs(name, dims, types, (), ("",) * 8, annotation=annotation, kernels=kernels)
    return MODELS[name].forward(args)


def batch_prefill(rows: int, requests: int, annotation: str, causal="True", window="-1"):
    name = "aiter::mha_batch_prefill"
    dims = ((rows, 4, 8), (100, 2, 8), (100, 2, 8), (requests + 1,), (requests + 1,), (9,))
    dims += ((),) * 9
    types = (BF16, BF16, BF16, INT, INT, INT) + ("Scalar",) * 9
    concrete = ("",) * 6 + ("5", "5", "0.", "0.35", "0.", "False", causal, window, "-1")
    args = OpArgs(name, dims, types, (), concrete, annotation=annotation)
    return MODELS[name].forward(args)


# --- the annotation ---------------------------------------------------------------------------


def test_vllm_iteration_annotation_is_parsed_per_phase() -> None:
    real = (
        "execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640)"
        "_generation_0(sq0sk0sqsq0sqsk0)"
    )
    it = parse_iteration(real)
    assert it is not None and it.tokens == 15360
    assert it.context == Phase(15, 15360, 15360, 15728640, 15728640)
    assert it.generation == Phase(0, 0, 0, 0, 0)


@pytest.mark.parametrize(
    "annotation",
    ["", "capture_8192_PIECEWISE", "step[EXTEND bs=15 toks=15360]", "execute_context_1(888)"],
)
def test_annotations_without_request_statistics_parse_to_none(annotation: str) -> None:
    assert parse_iteration(annotation) is None


def test_older_vllm_prefill_annotation_assumes_keys_are_the_new_tokens() -> None:
    """`execute_context_1(888_788544)_generation_0(0)` (the B200 trace): Σsq = 888 and
    Σsq² = 888² = 788544; with no key lengths, sk = sq per request (no cached prefix)."""
    it = parse_iteration("execute_context_1(888_788544)_generation_0(0)")
    assert it is not None and it.tokens == 888
    assert it.context == Phase(1, 888, 888, 788544, 788544)
    assert it.generation == Phase(0, 0, 0, 0, 0)
    assert it.assumption.startswith("keys = new tokens")
    # decode requests in that format: their cached key lengths are unknown
    assert parse_iteration("execute_context_1(888_788544)_generation_2(2)") is None


def test_b200_prefill_attention_from_the_older_annotation() -> None:
    """q [888, 8, 64] fp8, k/v [888, 1, 64] bf16, out [888, 8, 64] bf16, one causal prompt.

    pairs = 788544 − (788544 − 888)/2 = 394,716 (= 888·889/2);
    FLOPs = 2·8·394716·(64 + 64) = 808,378,368;
    bytes = Q 888·8·64·1 = 454,656 + K,V 888·1·128·2 = 227,328 + O 888·8·64·2 = 909,312.
    """
    name = "vllm::unified_attention_with_output"
    dims = ((888, 8, 64), (888, 1, 64), (888, 1, 64), (888, 8, 64), (), (), ())
    types = (FP8, BF16, BF16, BF16, "", "", "")
    annotation = "execute_context_1(888_788544)_generation_0(0)"
    args = OpArgs(name, dims, types, (), ("",) * 7, annotation=annotation)
    work = MODELS[name].forward(args)
    assert 888 * 889 // 2 == 394716
    assert work.flops == 808_378_368
    assert work.bytes == 454_656 + 227_328 + 909_312
    assert work.compute_spec == "matrix_fp8"
    assert work.params["assumption"].startswith("keys = new tokens")


def test_the_phases_are_chosen_by_the_op_s_query_rows() -> None:
    it = parse_iteration(MIXED)
    assert it is not None
    assert phases_for(it, 10).sq == 10  # both phases in one call (vLLM)
    assert phases_for(it, 8) == it.context  # the prefill half only (aiter batch prefill)
    assert phases_for(it, 2) == it.generation
    assert phases_for(it, 16).sq == 10  # 6 rows of CUDA-graph padding do no work
    with pytest.raises(Unsupported):
        phases_for(it, 9)
    with pytest.raises(Unsupported):
        phases_for(it, 8, requests=3)  # the op's batch says 3 requests, the annotation 2


# --- vllm::unified_attention_with_output ------------------------------------------------------


def test_vllm_prefill_counts_causal_pairs_with_cached_prefix() -> None:
    w = unified(8, PREFILL_ONLY)
    assert (w.flops, w.bytes) == (3_072, 1_600)
    assert w.compute_spec == "matrix_bf16"
    assert w.params["sum_sqsk"] == 37


def test_vllm_mixed_batch_adds_the_decode_requests() -> None:
    """Decode: sq = 1 per request, so pairs = sk: 14 + 16 = 30; total 24 + 30 = 54.
    FLOPs 2·4·54·16 = 6,912; bytes Q 10·4·8·2 = 640 + K,V 39·2·16·2 = 2,496 + O 640."""
    w = unified(10, MIXED)
    assert (w.flops, w.bytes) == (6_912, 640 + 2_496 + 640)


def test_vllm_attention_without_statistics_has_no_model() -> None:
    with pytest.raises(Unsupported, match="capture_8192_PIECEWISE"):
        unified(8, "capture_8192_PIECEWISE")
    with pytest.raises(Unsupported, match="none"):
        unified(8, "")


def test_vllm_attention_that_only_zero_filled_is_scored_as_the_fill() -> None:
    """vLLM's piecewise capture runs attention without metadata: one FillFunctor over the
    output [8, 4, 8] = 256 elements, 1 FLOP each (the copy convention), 256·2 bytes."""
    w = unified(8, "capture_8_PIECEWISE", kernels=(FILL,))
    assert (w.flops, w.bytes) == (256, 512)
    assert w.unit == "vector" and "dummy_run" in w.params


def test_a_real_attention_kernel_is_not_taken_for_a_fill() -> None:
    w = unified(8, PREFILL_ONLY, kernels=("kernel_unified_attention_2d", FILL))
    assert w.flops == 3_072


# --- aiter::mha_batch_prefill -----------------------------------------------------------------


def test_batch_prefill_reads_heads_from_the_paged_cache_and_batch_from_cu_seqlens() -> None:
    w = batch_prefill(8, 2, PREFILL_ONLY)
    assert (w.flops, w.bytes) == (3_072, 1_600)
    assert w.params["H_KV"] == 2


def test_batch_prefill_of_the_sglang_trace() -> None:
    """Qwen3-8B, 15 requests of 1024 tokens: pairs = 15,728,640 − (15,728,640 − 15,360)/2
    = 7,872,000; FLOPs = 2·32·7,872,000·256 = 128,974,848,000. Bytes: Q and O
    15,360·32·128·2 = 125,829,120 each, K,V 15,360·8·256·2 = 62,914,560: 314,572,800."""
    name = "aiter::mha_batch_prefill"
    dims = ((15360, 32, 128), (835874, 8, 128), (835874, 8, 128), (16,), (16,), (15616,))
    concrete = ("",) * 6 + ("1024", "1024", "0.", "0.088", "0.", "False", "True", "-1", "-1")
    annotation = (
        "execute_15360_context_15(sq15360sk15360sqsq15728640sqsk15728640)"
        "_generation_0(sq0sk0sqsq0sqsk0)"
    )
    args = OpArgs(name, dims + ((),) * 9, (BF16,) * 3, (), concrete, annotation=annotation)
    w = MODELS[name].forward(args)
    assert (w.flops, w.bytes) == (128_974_848_000, 314_572_800)


def test_non_causal_batch_prefill_scores_every_pair() -> None:
    w = batch_prefill(8, 2, PREFILL_ONLY, causal="False")
    assert w.flops == 2 * 4 * 37 * 16  # 4,736


def test_sliding_window_batch_prefill_is_not_guessed() -> None:
    with pytest.raises(Unsupported, match="window"):
        batch_prefill(8, 2, PREFILL_ONLY, window="128")


# --- _C_cache_ops::reshape_and_cache_flash ----------------------------------------------------


def cache_write(cache_dtype: str):
    name = "_C_cache_ops::reshape_and_cache_flash"
    dims = ((8192, 8, 64), (8192, 8, 64), (224304, 32, 8, 64), (224304, 32, 8, 64), (8192,))
    types = (BF16, BF16, cache_dtype, cache_dtype, LONG, "", "float", "float")
    args = OpArgs(name, (*dims, (), (), ()), types, (), ("",) * 8)
    return MODELS[name].forward(args)


def test_cache_write_reads_new_keys_values_and_slots_and_writes_them_to_the_cache() -> None:
    """4,194,304 key and 4,194,304 value elements: read 2·4,194,304·2 = 16,777,216 bytes,
    8,192 int64 slots = 65,536, written 16,777,216: 33,619,968 bytes (32.0625 MiB);
    FLOPs = elements written = 8,388,608."""
    w = cache_write(BF16)
    assert (w.flops, w.bytes) == (8_388_608, 33_619_968)
    assert w.unit == "vector"


def test_fp8_cache_write_writes_one_byte_per_element() -> None:
    assert cache_write(FP8).bytes == 16_777_216 + 65_536 + 8_388_608


def test_inference_ops_are_registered_and_taken_whole() -> None:
    for name in MODELS:
        assert registry.model_for(name) is MODELS[name]
        assert registry.has_model(name)


def test_the_params_split_query_tokens_by_phase_for_the_workload_profile() -> None:
    """The sdpa analysis's prefill/decode profile reads `sum_ctx_tokens`/`sum_gen_tokens`:
    8 context and 2 generation query tokens in a mixed call (a decode-light batch, 80 %
    context, "mixed"); the prefill half alone has no generation tokens."""
    mixed = unified(10, MIXED).params
    assert (mixed["sum_ctx_tokens"], mixed["sum_gen_tokens"]) == (8, 2)
    profile = workload_profile(dict(mixed))
    assert (profile["ctx_ratio"], profile["workload_type"]) == (0.8, "mixed")
    assert (profile["attention_pattern"], profile["gqa_ratio"]) == ("GQA", 2)
    prefill = batch_prefill(8, 2, MIXED).params
    assert (prefill["sum_ctx_tokens"], prefill["sum_gen_tokens"]) == (8, 0)
    assert workload_profile(dict(prefill))["workload_type"] == "prefill_heavy"
    padded = unified(16, MIXED).params  # 6 rows of CUDA-graph padding
    assert (padded["sum_ctx_tokens"], padded["sum_gen_tokens"]) == (8, 2)
