"""MoE grouped GEMMs of triton_kernels.matmul_ogs: FLOPs and bytes counted by hand.

Arguments are laid out as analyzers/trace/pseudo.py composes them:
[x, w (as stored), router logits, k, kernel name].
"""

from __future__ import annotations

import json

import pytest

from rooflens.analyzers.perf.base import Unsupported, parse_args
from rooflens.analyzers.perf.moe_ogs import DOWN, MODELS, UP, moe_ogs_gemm, parse_kernel
from rooflens.analyzers.perf.registry import has_model, model_for

BF16, U8 = "c10::BFloat16", "unsigned char"
UP_KERNEL = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu"
DOWN_KERNEL = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"


def args(x, w, router, k, kernel, x_type=BF16, w_type=U8, name=UP):
    return parse_args(
        name,
        json.dumps([x, w, router, [], []]),
        json.dumps([x_type, w_type, BF16, "Scalar", ""]),
        None,
        json.dumps(["", "", "", k, kernel]),
    )


def test_kernel_names_spell_output_activation_and_weight_dtypes():
    up = parse_kernel(UP_KERNEL)
    assert (up.y, up.x, up.w, up.tile, up.epilogue) == (
        "bf16",
        "bf16",
        "mxfp4",
        "16x128x256x1",
        "swiglu",
    )
    down = parse_kernel(DOWN_KERNEL)
    assert (down.w, down.epilogue) == ("mxfp4", "")
    # `mxfp4` holds the separator "x" itself, wherever it stands
    w4a4 = parse_kernel("_matmul_ogs_NNT_bf16xmxfp4xmxfp4_128x128x128x1")
    assert (w4a4.y, w4a4.x, w4a4.w) == ("bf16", "mxfp4", "mxfp4")
    assert parse_kernel("_finalize_matmul_scatter_bf16") is None
    assert parse_kernel("_matmul_ogs_NNT_bf16xint3xmxfp4_16x128x256x1") is None


def test_up_projection_of_a_gpt_oss_decode_step():
    # 32 tokens, top-4 of 32 experts: R = 128 routed rows; K = 2 * 1536 = 3072, N = 5888
    work = moe_ogs_gemm(args([32, 3072], [32, 1536, 5888], [32, 32], "4", UP_KERNEL))
    assert work.flops == 2 * 128 * 3072 * 5888 == 4_630_511_616
    x = 32 * 3072 * 2  # the 32 token rows, gathered by routing inside the kernel: 196,608
    w = 32 * 1536 * 5888 * 1  # min(32, 128) = 32 experts, two fp4 per byte: 289,406,976
    scales = 32 * (3072 // 32) * 5888  # one e8m0 byte per 32 values along K: 18,087,936
    out = 128 * (5888 // 2) * 2  # swiglu halves N: 753,664
    assert work.bytes == x + w + scales + out == 308_445_184
    assert work.compute_spec == "matrix_bf16"  # bf16 x mxfp4 multiplies in bf16
    assert work.params["active_experts"] == 32
    assert work.params["N_out"] == 2944
    assert work.params["dtype_A_B"] == ("bf16", "mxfp4")


def test_down_projection_reads_the_routed_rows():
    work = moe_ogs_gemm(args([128, 2944], [32, 1472, 3072], [32, 32], "4", DOWN_KERNEL, name=DOWN))
    assert work.flops == 2 * 128 * 2944 * 3072 == 2_315_255_808
    x = 128 * 2944 * 2  # 753,664
    w = 32 * 1472 * 3072  # 144,703,488
    scales = 32 * (2944 // 32) * 3072  # 92 scale rows: 9,043,968
    out = 128 * 3072 * 2  # before the finalize kernel sums each token's 4 rows: 786,432
    assert work.bytes == x + w + scales + out == 155_287_552
    assert work.params["M"] == 128 and work.params["epilogue"] == ""


def test_only_experts_that_can_get_a_row_are_read():
    # 2 tokens x top-4 = 8 routed rows: at most 8 of the 32 experts' weights are touched
    work = moe_ogs_gemm(args([2, 64], [32, 32, 128], [2, 32], "4", UP_KERNEL))
    assert work.flops == 2 * 8 * 64 * 128 == 131_072
    # x 2*64*2 = 256; w 8*32*128 = 32,768; scales 8*2*128 = 2,048; out 8*64*2 = 1,024
    assert work.bytes == 256 + 32_768 + 2_048 + 1_024 == 36_096
    assert work.params["active_experts"] == 8


def test_unpacked_weights_and_fp8_activations():
    # bf16 weights [E=4, K=64, N=32]; 8 tokens, top-2: x holds the 16 routed rows
    bf16 = args([16, 64], [4, 64, 32], [8, 4], "2", "_matmul_ogs_NNT_bf16xbf16xbf16_64x64x64x1")
    work = moe_ogs_gemm(parse_args_with(bf16, w_type=BF16))
    assert work.flops == 2 * 16 * 64 * 32 == 65_536
    # x 16*64*2 = 2,048; w 4*64*32*2 = 16,384; no scales; out 16*32*2 = 1,024
    assert work.bytes == 2_048 + 16_384 + 1_024 == 19_456
    assert work.compute_spec == "matrix_bf16"
    fp8 = args(
        [32, 3072],
        [32, 1536, 5888],
        [32, 32],
        "4",
        "_matmul_ogs_NNT_bf16xfp8e4nvxmxfp4_16x128x256x1_swiglu",
        x_type="c10::Float8_e4m3fn",
    )
    work = moe_ogs_gemm(fp8)
    assert work.compute_spec == "matrix_fp8"  # the wider operand sets the unit's precision
    assert work.bytes == 32 * 3072 * 1 + 289_406_976 + 18_087_936 + 753_664


def parse_args_with(a, w_type):
    types = list(a.types)
    types[1] = w_type
    return parse_args(
        a.name,
        json.dumps([list(d) for d in a.dims]),
        json.dumps(types),
        None,
        json.dumps(list(a.concrete)),
    )


@pytest.mark.parametrize(
    ("x", "w", "k", "kernel", "why"),
    [
        ([32, 3000], [32, 1536, 5888], "4", UP_KERNEL, "does not match"),
        ([64, 3072], [32, 1536, 5888], "4", UP_KERNEL, "neither"),
        ([32, 3072], [32, 1536, 5888], "", UP_KERNEL, "top-k"),
        ([32, 3072], [32, 1536, 5888], "4", "_topk_forward", "not a matmul_ogs"),
        ([32, 3072], [1536, 5888], "4", UP_KERNEL, "expected"),
    ],
)
def test_inconsistent_records_are_declined(x, w, k, kernel, why):
    with pytest.raises(Unsupported, match=why):
        moe_ogs_gemm(args(x, w, [32, 32], k, kernel))


def test_registered_and_taken_whole_by_the_unified_table():
    for name in (UP, DOWN):
        assert model_for(name) is MODELS[name]
        assert has_model(name)
