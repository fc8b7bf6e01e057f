"""flashinfer trtllm-gen MXFP4 MoE pseudo ops: FLOPs and bytes counted by hand.

Arguments are laid out as analyzers/trace/pseudo_trtllm.py composes them. Sizes are the B200
vLLM trace's: T = 888 tokens, H = 3072, E = 128 experts, top-4 (R = 3552 routed rows),
I = 512, P = 5472 padded rows (= 3552 + 128·15, tile 16).
"""

from __future__ import annotations

import json

import pytest

from rooflens.analyzers.perf.base import Unsupported, parse_args
from rooflens.analyzers.perf.moe_trtllm import (
    FINALIZE,
    GEMM1,
    GEMM2,
    MXFP8_QUANTIZE,
    finalize,
    mxfp8_quantize,
    parse_kernel,
    trtllm_gemm,
)
from rooflens.analyzers.perf.registry import has_model, model_for

BF16, U8, FP8 = "c10::BFloat16", "unsigned char", "c10::Float8_e4m3fn"
TAIL = "_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3"
GEMM1_KERNEL = f"bmm_MxE4m3_MxE2m1MxE4m3{TAIL}_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f"
GEMM2_KERNEL = f"bmm_Bfloat16_MxE2m1MxE4m3{TAIL}_biasM_bN_tmaOpt_clmp_dynBatch_sm100f"


def gemm_args(
    name=GEMM1,
    grid="[8,342,1]",
    kernel=GEMM1_KERNEL,
    routed=3552,
    g1_out=(5472, 512),
    g2_out=(5472, 3072),
    g1_type=U8,
):
    dims = [[888, 3072], [888, 128], [888, 4], [routed], list(g1_out), list(g2_out), [], []]
    types = [BF16, BF16, "int", "int", g1_type, BF16, "ScalarList", ""]
    concrete = ["", "", "", "", "", "", grid, kernel]
    return parse_args(name, json.dumps(dims), json.dumps(types), None, json.dumps(concrete))


def test_kernel_names_give_dtypes_tile_and_gating():
    k1 = parse_kernel(GEMM1_KERNEL)
    assert (k1.out, k1.w, k1.x) == ("MxE4m3", "MxE2m1", "MxE4m3")
    assert (k1.tile_m, k1.tile_n, k1.tile_k, k1.gated, k1.trans_out) == (128, 16, 256, True, True)
    k2 = parse_kernel(GEMM2_KERNEL)
    assert (k2.out, k2.gated) == ("Bfloat16", False)
    assert parse_kernel("bmm_E2m1_E2m1E2m1_Fp32_t128x16x256") is None  # NVFP4: not modelled
    assert parse_kernel("void moe::dev::finalize::finalizeKernelVecLoad<>") is None


def test_gemm1_gate_up_projection():
    work = trtllm_gemm(gemm_args())
    # R = 888·4 = 3552 rows, K = H = 3072, N = 2I = 1024 (grid.x 8 · tile 128)
    assert work.flops == 2 * 3552 * 3072 * 1024 == 22_347_251_712
    x = 888 * 3072 * 1 + 888 * 3072 // 32  # MXFP8 tokens + e8m0 scales: 2,727,936 + 85,248
    w = 128 * 3072 * 1024 // 2  # all 128 experts (min(128, 3552)), two fp4 a byte: 201,326,592
    w_scales = 128 * (3072 // 32) * 1024  # 12,582,912
    out = 3552 * 512 * 1 + 3552 * 512 // 32  # SwiGLU halves N; MXFP8: 1,818,624 + 56,832
    assert work.bytes == x + w + w_scales + out == 218_598_144
    assert work.compute_spec == "matrix_fp8"  # mxfp8 x mxfp4: the f8f6f4 tensor-core rate
    assert work.params["active_experts"] == 128 and work.params["N_out"] == 512
    assert work.params["padded_rows"] == 5472 and work.params["topk"] == 4


def test_gemm2_down_projection():
    work = trtllm_gemm(gemm_args(GEMM2, "[24,342,1]", GEMM2_KERNEL))
    # K = I = 512, N = H = 3072 (grid.x 24 · tile 128)
    assert work.flops == 2 * 3552 * 512 * 3072 == 11_173_625_856
    x = 3552 * 512 + 3552 * 512 // 32  # gemm1's MXFP8 rows: 1,818,624 + 56,832
    w = 128 * 512 * 3072 // 2  # 100,663,296
    w_scales = 128 * (512 // 32) * 3072  # 6,291,456
    out = 3552 * 3072 * 2  # bf16, before finalize sums each token's 4 rows: 21,823,488
    assert work.bytes == x + w + w_scales + out == 130_653_696
    assert work.compute_spec == "matrix_fp8"


def test_only_experts_that_can_get_a_row_are_read():
    # T = 2 tokens, top-4 of 128: R = 8 rows, at most 8 experts' weights; H = 256, I = 128
    dims = [[2, 256], [2, 128], [2, 4], [8], [128, 128], [128, 256], [], []]
    types = [BF16, BF16, "int", "int", U8, BF16, "ScalarList", ""]
    concrete = ["", "", "", "", "", "", "[2,8,1]", GEMM1_KERNEL]
    work = trtllm_gemm(
        parse_args(GEMM1, json.dumps(dims), json.dumps(types), None, json.dumps(concrete))
    )
    assert work.flops == 2 * 8 * 256 * 256 == 1_048_576
    # x 2·256 + 16 = 528; w 8·(256·256/2 + 256·256/32) = 8·34,816 = 278,528; out 8·128 + 32
    assert work.bytes == 528 + 278_528 + 1_056
    assert work.params["active_experts"] == 8


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (gemm_args(grid="[4,342,1]"), "is not 2I"),  # grid.x·tile = 512, allocation says I=512
        (gemm_args(g1_out=(5472, 256), grid="[8,342,1]"), "is not 2I"),
        (gemm_args(GEMM2, "[16,342,1]", GEMM2_KERNEL), "is not H"),
        (gemm_args(grid="[8,300,1]"), "does not tile P"),
        (gemm_args(routed=3000), "is not T·k"),
        (gemm_args(g2_out=(5472, 2880)), "is not H"),
        (gemm_args(g1_out=(3000, 512), g2_out=(3000, 3072)), "GEMM outputs"),
        (gemm_args(g1_type=BF16), "vs allocation"),  # MxE4m3 output in a 2-byte buffer
        (gemm_args(grid=""), "not recorded"),
        (gemm_args(kernel=GEMM1_KERNEL.replace("_transOut", "")), "not a transOut bmm"),
    ],
)
def test_declines_when_recorded_facts_disagree(args, reason):
    with pytest.raises(Unsupported, match=reason):
        trtllm_gemm(args)


def test_finalize_weighted_sum_of_routed_rows():
    dims = [[5472, 3072], [888, 4], [3552], [888, 3072], []]
    types = [BF16, BF16, "int", BF16, ""]
    args = parse_args(FINALIZE, json.dumps(dims), json.dumps(types), None, json.dumps([""] * 5))
    work = finalize(args)
    assert work.flops == (2 * 4 - 1) * 888 * 3072 == 19_095_552  # 4 multiplies, 3 adds
    rows = 3552 * 3072 * 2  # the routed rows of gemm2's output: 21,823,488
    weights, index = 3552 * 2, 3552 * 4  # bf16 top-k weights, int32 permutation
    out = 888 * 3072 * 2  # 5,455,872
    assert work.bytes == rows + weights + index + out == 27_300_672
    assert work.compute_spec == "vector_bf16"


def test_mxfp8_quantize_reads_bf16_writes_fp8_and_scales():
    dims, types = [[888, 3072], [888, 3072], [85248]], [BF16, FP8, U8]
    args = parse_args(MXFP8_QUANTIZE, json.dumps(dims), json.dumps(types), None, None)
    work = mxfp8_quantize(args)
    assert work.flops == 4 * 888 * 3072 == 10_911_744
    assert work.bytes == 888 * 3072 * 2 + 888 * 3072 + 85248 == 8_269_056
    assert work.compute_spec == "vector_bf16"
    short = parse_args(
        MXFP8_QUANTIZE,
        json.dumps([[888, 3072], [888, 3072], [85247]]),
        json.dumps(types),
        None,
        None,
    )  # fewer scales than 32-value blocks
    with pytest.raises(Unsupported):
        mxfp8_quantize(short)


def test_registered_and_taken_whole():
    for name in (GEMM1, GEMM2, FINALIZE, MXFP8_QUANTIZE):
        assert model_for(name) is not None
    assert has_model(GEMM1) and has_model(GEMM2)  # MoE_unfused: whole-op category
