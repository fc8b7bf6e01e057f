"""Inductor Triton kernels recorded as ops: FLOPs from the fused ops, bytes per pointer."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.triton import fused_ops, is_triton_kernel_op, triton_work

BF16 = "c10::BFloat16"


def args(name: str, dims: list, types: list[str], concrete: list[str]) -> OpArgs:
    shapes = tuple(tuple(d) for d in dims)
    return OpArgs(name=name, dims=shapes, types=tuple(types), concrete=tuple(concrete))


def test_pointwise_kernel_counts_its_input_and_its_recorded_output_once():
    """torch_compile_triton's SiLU-mul: in (8,4096,8192) and out (32768,8192), bf16."""
    work = triton_work(
        args(
            "triton_poi_fused__unsafe_view_mul_silu_2",
            [[8, 4096, 8192], [32768, 8192], []],
            [BF16, BF16, "Scalar"],
            ["", "", "268435456"],
        )
    )
    n = 8 * 4096 * 8192
    assert work.flops == (1 + 4) * n  # mul 1 + silu 4 per element
    assert work.bytes == 2 * n * 2  # read 2 bytes, write 2 bytes per element (1024 MiB)
    assert work.bytes / 2**20 == 1024.0  # TraceLens: 1536 (the output counted twice)
    assert work.unit == "vector" and work.precision == "bf16"


def test_pointwise_kernel_with_one_pointer_updates_it_in_place():
    work = triton_work(
        args("triton_poi_fused_relu_0", [[1024, 64], []], ["float", "Scalar"], ["", "65536"])
    )
    assert work.flops == 65536
    assert work.bytes == 2 * 65536 * 4  # read and written, fp32


def test_reduction_counts_each_pointer_once_and_both_element_counts():
    """RMSNorm: x (8,4096,2048), weight (2048), out (8,4096,2048); xnumel 32768, rnumel 2048."""
    work = triton_work(
        args(
            "triton_red_fused_add_mean_mul_pow_rsqrt_0",
            [[8, 4096, 2048], [2048], [8, 4096, 2048], [], []],
            [BF16, BF16, BF16, "Scalar", "Scalar"],
            ["", "", "", "32768", "2048"],
        )
    )
    assert fused_ops("triton_red_fused_add_mean_mul_pow_rsqrt_0") == (
        "add",
        "mean",
        "mul",
        "pow",
        "rsqrt",
    )
    assert work.flops == (1 + 1 + 1 + 2 + 2) * 32768 * 2048
    assert work.bytes == (2 * 8 * 4096 * 2048 + 2048) * 2  # 256.0039 MiB, as TraceLens
    assert work.params == {"fused_ops": "aten.add, aten.mean, aten.mul, aten.pow, aten.rsqrt"} | {
        "xnumel": 32768,
        "rnumel": 2048,
    }


def test_mixed_dtypes_and_bitwise_ops():
    """B200's index arithmetic: int32, int64 and bool pointers over 888 elements."""
    name = "triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0"
    work = triton_work(
        args(
            name,
            [[888], [888], [888], [], [], [], [], [], []],
            ["int", "long int", "bool", *["Scalar"] * 6],
            ["", "", "", "0", "1", "2", "3", "4", "888"],
        )
    )
    assert len(fused_ops(name)) == 8
    assert work.flops == 8 * 888
    assert work.bytes == 888 * (4 + 8 + 1)


def test_kernels_without_an_element_count_or_tensors_are_unsupported():
    with pytest.raises(Unsupported, match="no element count"):
        triton_work(args("triton_poi_fused_0", [[32], [32]], ["int", "int"], ["", ""]))
    with pytest.raises(Unsupported, match="no tensor inputs"):
        triton_work(args("triton_poi_fused_add_0", [[]], ["Scalar"], ["16"]))
    assert is_triton_kernel_op("triton_per_fused_sum_3")
    assert not is_triton_kernel_op("triton_kernels/topk.py(86): topk")
