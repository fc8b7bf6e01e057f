"""Reduce and softmax models: hand-counted FLOPs and bytes, and the §10.22 output-size fix."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.reduce import MODELS, reduced_shape

BF16, FP32, HALF = "c10::BFloat16", "float", "c10::Half"


def args(name: str, dims, types, concrete) -> OpArgs:
    return OpArgs(name, tuple(dims), tuple(types), (), tuple(concrete))


def work(name: str, dims, types, concrete):
    return MODELS[name].forward(args(name, dims, types, concrete))


def test_reduced_shape_keeps_or_drops_reduced_dims() -> None:
    assert reduced_shape((2, 3, 4), (1,), keepdim=True) == (2, 1, 4)
    assert reduced_shape((2, 3, 4), (-1, -2), keepdim=False) == (2,)
    assert reduced_shape((2, 3, 4), None, keepdim=False) == ()
    assert reduced_shape((2, 3, 4), (), keepdim=True) == (1, 1, 1)


def test_row_mean_writes_one_element_per_row_not_one_in_total() -> None:
    """§10.22: TraceLens reports 1 output element here (dim '[-1]' never parsed)."""
    w = work(
        "aten::mean",
        [(16, 559, 1024), (), (), ()],
        [FP32, "ScalarList", "Scalar", ""],
        ["", "[-1]", "True", ""],
    )
    assert w.params == {
        "num_input_elems": 9_158_656,
        "num_output_elems": 8_944,
        "dtype_in_out": (FP32, None),
        "reduce_type": "mean",
    }
    assert (w.flops, w.bytes) == (9_158_656, (9_158_656 + 8_944) * 4)
    assert w.compute_spec == "vector_fp32"


def test_keepdim_false_leaves_the_output_element_count_unchanged() -> None:
    keep = work(
        "aten::sum",
        [(8, 16), (), (), ()],
        [FP32, "ScalarList", "Scalar", ""],
        ["", "[0]", "True", ""],
    )
    drop = work(
        "aten::sum",
        [(8, 16), (), (), ()],
        [FP32, "ScalarList", "Scalar", ""],
        ["", "[0]", "False", ""],
    )
    assert keep.params["num_output_elems"] == drop.params["num_output_elems"] == 16
    assert drop.bytes == (128 + 16) * 4


def test_empty_dim_list_reduces_everything_to_one_element() -> None:
    w = work(
        "aten::mean",
        [(10, 1000), (), (), (), ()],
        [BF16, "ScalarList", "Scalar", "", BF16],
        ["", "[]", "False", "", ""],
    )
    assert (w.params["num_output_elems"], w.bytes) == (1, (10_000 + 1) * 2)


def test_sum_with_only_a_dtype_argument_is_a_full_reduction() -> None:
    w = work("aten::sum", [(4, 5), ()], [FP32, "Scalar"], ["", "6"])
    assert w.params["num_output_elems"] == 1


def test_linalg_norm_reads_its_dim_from_input_2() -> None:
    w = work(
        "aten::linalg_norm",
        [(1, 5184, 768), (), (), (), ()],
        [BF16, "", "ScalarList", "Scalar", ""],
        ["", "", "[-1]", "True", ""],
    )
    assert w.params["num_output_elems"] == 5_184
    assert w.params["reduce_type"] == "norm"
    assert w.bytes == (3_981_312 + 5_184) * 2


def test_std_with_an_unbiased_flag_only_is_a_full_reduction() -> None:
    full = work("aten::std", [(4, 6), ()], [FP32, "Scalar"], ["", "True"])
    rows = work(
        "aten::std",
        [(4, 6), (), (), ()],
        [FP32, "ScalarList", "Scalar", "Scalar"],
        ["", "[1]", "1", "False"],
    )
    assert (full.params["num_output_elems"], rows.params["num_output_elems"]) == (1, 4)
    assert full.params["reduce_type"] == "std"


def test_cumsum_writes_as_many_elements_as_it_reads() -> None:
    w = work("aten::cumsum", [(4, 5), (), ()], [FP32, "Scalar", ""], ["", "1", ""])
    assert (w.flops, w.bytes, w.params["num_output_elems"]) == (20, 20 * 4 * 2, 20)


def test_argmax_writes_int64_indices() -> None:
    w = work("aten::argmax", [(1, 5), (), ()], ["int", "Scalar", "Scalar"], ["", "-1", "False"])
    assert (w.flops, w.bytes) == (5, 5 * 4 + 1 * 8)
    assert w.params["dtype_in_out"] == ("int", "long int")


def test_max_over_a_dim_writes_values_and_indices() -> None:
    w = work("aten::max", [(4, 6), (), ()], [BF16, "Scalar", "Scalar"], ["", "1", "False"])
    assert (w.flops, w.bytes) == (24, 24 * 2 + 4 * 2 + 4 * 8)


def test_max_without_dim_is_a_full_reduction_without_indices() -> None:
    w = work("aten::max", [(4, 6)], [BF16], [""])
    assert (w.flops, w.bytes) == (24, 24 * 2 + 2)


def test_max_of_two_tensors_is_elementwise() -> None:
    w = work("aten::max", [(4,), (4,)], [FP32, FP32], ["", ""])
    assert (w.flops, w.bytes) == (4, 3 * 4 * 4)


def test_dim_out_of_range_is_unsupported() -> None:
    with pytest.raises(Unsupported):
        work(
            "aten::sum",
            [(4, 5), (), (), ()],
            [FP32, "ScalarList", "Scalar", ""],
            ["", "[2]", "False", ""],
        )


def test_reduce_backward_is_the_forward_formula() -> None:
    a = args(
        "aten::mean",
        [(8, 4), (), (), ()],
        [FP32, "ScalarList", "Scalar", ""],
        ["", "[1]", "True", ""],
    )
    model = MODELS["aten::mean"]
    assert model.backward is not None
    assert model.backward(a) == model.forward(a)


# --- softmax ----------------------------------------------------------------------------------


def test_softmax_counts_five_flops_per_element_and_one_read_one_write() -> None:
    """OWLv2's attention softmax: 16·5185·5185 = 430,147,600 elements."""
    w = work(
        "aten::_softmax",
        [(16, 5185, 5185), (), ()],
        [BF16, "Scalar", "Scalar"],
        ["", "-1", "False"],
    )
    assert (w.flops, w.bytes) == (2_150_738_000, 1_720_590_400)
    assert w.compute_spec == "vector_bf16"
    assert w.params == {"op_shape": (16, 5185, 5185), "dim": -1, "dtype_in_out": (BF16, BF16)}


def test_half_to_float_softmax_writes_fp32() -> None:
    w = work("aten::_softmax", [(2, 3), (), ()], [HALF, "Scalar", "Scalar"], ["", "-1", "True"])
    assert w.bytes == 6 * 2 + 6 * 4


def test_softmax_dtype_argument_sets_the_output_dtype() -> None:
    cast = work("aten::softmax", [(2, 3), (), ()], [BF16, "Scalar", "Scalar"], ["", "1", "6"])
    plain = work("aten::log_softmax", [(2, 3), (), ()], [BF16, "Scalar", ""], ["", "1", ""])
    assert (cast.bytes, plain.bytes, plain.flops) == (6 * 2 + 6 * 4, 6 * 2 * 2, 30)


def test_softmax_backward_reads_grad_and_output_and_writes_grad_input() -> None:
    w = work(
        "aten::_softmax_backward_data",
        [(2, 3), (2, 3), (), ()],
        [BF16, BF16, "Scalar", "Scalar"],
        ["", "", "-1", "15"],
    )
    assert (w.flops, w.bytes) == (4 * 6, 3 * 6 * 2)
    log = work(
        "aten::_log_softmax_backward_data",
        [(2, 3), (2, 3), (), ()],
        [FP32, FP32, "Scalar", "Scalar"],
        ["", "", "-1", "6"],
    )
    assert (log.flops, log.bytes) == (24, 3 * 6 * 4)
