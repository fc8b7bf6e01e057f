"""GEMM perf models (perf_report.md §6.4): hand-counted FLOPs and bytes per op and per fix."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.gemm import MODELS, TE_PSEUDO_GEMMS

BF16, FP32, FP8 = "c10::BFloat16", "float", "c10::Float8_e4m3fn"


def work(name: str, dims, types, concrete=(), strides=()):
    args = OpArgs(name, tuple(dims), tuple(types), tuple(strides), tuple(concrete))
    return MODELS[name].forward(args)


def test_mm_worked_example_from_the_spec():
    w = work(
        "aten::mm",
        [(8944, 1024), (1024, 2816)],
        [BF16, BF16],
        strides=[(1024, 1), (1, 1024)],
    )
    assert w.flops == 51_581_550_592  # 2·8944·2816·1024
    assert w.flops / 1e9 == pytest.approx(51.581550592, rel=1e-12)
    assert w.bytes == 74_457_088  # (8944·1024 + 1024·2816 + 8944·2816)·2
    assert (w.unit, w.precision, w.compute_spec) == ("matrix", "bf16", "matrix_bf16")
    assert w.params == {
        "M": 8944,
        "N": 2816,
        "K": 1024,
        "bias": False,
        "stride_A": (1024, 1),
        "stride_B": (1, 1024),
        "dtype_A_B": (BF16, BF16),
        "B": 1,
    }


def test_mm_with_out_tensor_writes_the_output_at_its_own_dtype():
    w = work("aten::mm", [(2, 3), (3, 4), (2, 4)], [BF16, BF16, FP32])
    assert w.flops == 48  # 2·2·4·3
    assert w.bytes == 6 * 2 + 12 * 2 + 8 * 4  # A, B bf16; out fp32


def test_mm_mixed_operand_dtypes_use_each_operands_size():
    w = work("aten::mm", [(2, 3), (3, 4)], [BF16, FP32])
    assert w.bytes == 6 * 2 + 12 * 4 + 8 * 2  # TraceLens: 52 (all at A's 2 bytes)
    assert w.precision == "bf16"


def test_mm_unknown_element_size_gives_unknown_bytes():
    w = work("aten::mm", [(2, 3), (3, 4)], ["c10::complex<double>", "c10::complex<double>"])
    assert w.flops == 48
    assert w.bytes is None


def test_addmm_adds_the_bias_flops_and_reads_a_1xn_bias():
    w = work("aten::addmm", [(3,), (4, 2), (2, 3), (), ()], [BF16, BF16, BF16, "Scalar", "Scalar"])
    assert w.flops == 2 * 4 * 3 * 2 + 4 * 3  # 60
    assert w.bytes == (8 + 6 + 12) * 2 + 3 * 2  # 58, same as TraceLens for a (N,) bias
    assert w.params["bias"] is True
    assert w.params["dtype_A_B"] == (BF16, BF16)


def test_addmm_bias_bytes_follow_the_real_c_shape_and_dtype():
    w = work("aten::addmm", [(4, 3), (4, 2), (2, 3), (), ()], [FP32, BF16, BF16, "", ""])
    assert w.bytes == (8 + 6 + 12) * 2 + 12 * 4  # 100; TraceLens assumes 3·2 bytes -> 58


def test_bmm_scales_flops_and_bytes_by_the_batch():
    w = work("aten::bmm", [(3, 4, 6), (3, 6, 5)], [FP32, FP32])
    assert w.flops == 3 * 2 * 4 * 5 * 6  # 720
    assert w.bytes == 3 * (24 + 30 + 20) * 4  # 888
    assert (w.params["B"], w.params["M"], w.params["N"], w.params["K"]) == (3, 4, 5, 6)
    assert w.precision == "fp32"


def test_baddbmm_reads_its_c_tensor_once_at_its_real_size():
    w = work("aten::baddbmm", [(3, 4, 5), (3, 4, 6), (3, 6, 5), (), ()], [BF16] * 3 + [""] * 2)
    assert w.flops == 3 * (2 * 4 * 5 * 6 + 4 * 5)  # 780
    assert w.bytes == 3 * (24 + 30 + 20) * 2 + 60 * 2  # 564; TraceLens 3·(74 + 5)·2 = 474


def test_scaled_mm_fp8_without_out_dtype_writes_two_byte_output():
    dims = [(16, 32), (32, 8), (), (), (), (), (), ()]
    types = [FP8, FP8, FP32, FP32, "", "", "", "Scalar"]
    w = work("aten::_scaled_mm", dims, types, ["", "", "", "", "", "", "", "False"])
    assert w.flops == 2 * 16 * 8 * 32  # 8192: an absent bias (dims[4] == ()) adds nothing
    assert w.bytes == 16 * 32 + 32 * 8 + 16 * 8 * 2  # 1024
    assert w.precision == "fp8"
    assert w.params["bias"] is False


def test_scaled_mm_detects_the_bias_at_input_4_and_reads_out_dtype():
    dims = [(16, 32), (32, 8), (), (), (8,), (), (), ()]
    types = [FP8, FP8, FP32, FP32, BF16, "", "Scalar", "Scalar"]
    w = work("aten::_scaled_mm", dims, types, ["", "", "", "", "", "", "15", "False"])
    assert w.params["bias"] is True  # TraceLens: len(Input Dims) == 3 -> False
    assert w.flops == 8192 + 16 * 8
    assert w.bytes == 512 + 256 + 16 * 8 * 2 + 8 * 2  # out_dtype 15 = bfloat16


def test_scaled_mm_fp32_out_dtype_code_sizes_the_output():
    dims = [(16, 32), (32, 8), (), (), (), (), (), ()]
    types = [FP8, FP8, FP32, FP32, "", "", "Scalar", "Scalar"]
    w = work("aten::_scaled_mm", dims, types, ["", "", "", "", "", "", "6", "False"])
    assert w.bytes == 512 + 256 + 16 * 8 * 4  # 6 = float; TraceLens assumes 2 bytes -> 1024


def test_trtllm_scaled_mm_reads_out_dtype_at_input_5():
    dims = [(16, 32), (32, 8), (), (), (), ()]
    types = [FP8, FP8, FP32, FP32, "", "Scalar"]
    w = work("trtllm::cublas_scaled_mm", dims, types, ["", "", "", "", "", "6"])
    assert w.bytes == 512 + 256 + 512


def test_int8_linear_matmul_is_an_int8_scaled_mm():
    w = work("bitsandbytes::int8_linear_matmul", [(4, 8), (8, 2)], ["signed char"] * 2)
    assert w.flops == 2 * 4 * 2 * 8  # 128
    assert w.bytes == 32 + 16 + 8 * 2  # 1-byte inputs -> 2-byte output (as TraceLens)
    assert (w.precision, w.compute_spec) == ("int8", "matrix_int8")


@pytest.mark.parametrize("name", TE_PSEUDO_GEMMS)
def test_te_pseudo_gemms_always_write_two_byte_output(name):
    w = work(name, [(4, 8), (8, 2)], [FP8, FP8])
    assert w.flops == 128
    assert w.bytes == 32 + 16 + 8 * 2


def test_te_pseudo_gemm_rejects_mixed_dtypes():
    with pytest.raises(Unsupported, match="dtypes differ"):
        work("_Linear_yfwd_mm", [(4, 8), (8, 2)], [FP8, BF16])


def test_gemm_with_dynamic_quant_takes_k_from_x_and_n_from_the_weight_rows():
    dims = [(), (4, 8), (3, 4), ()]
    w = work("vllm::gemm_with_dynamic_quant", dims, ["", BF16, "unsigned char", ""])
    assert (w.params["M"], w.params["N"], w.params["K"]) == (4, 3, 8)
    assert w.flops == 2 * 4 * 3 * 8  # 192
    assert w.bytes == (32 + 24 + 12) * 2  # x's element size for every tensor (as TraceLens)


def test_gemm_with_dynamic_quant_needs_two_matrices():
    with pytest.raises(Unsupported, match="two 2-D inputs"):
        work("vllm::gemm_with_dynamic_quant", [(4, 8)], [BF16])


def test_wrong_rank_is_unsupported_with_a_reason():
    with pytest.raises(Unsupported, match="3-D, expected 2-D"):
        work("aten::mm", [(2, 3, 4), (4, 5)], [BF16, BF16])
    with pytest.raises(Unsupported, match="no recorded shape"):
        work("aten::bmm", [(2, 3, 4)], [BF16])


def test_core_gemm_ops_have_no_backward_model():
    assert all(model.backward is None and model.bwd_category is None for model in MODELS.values())
