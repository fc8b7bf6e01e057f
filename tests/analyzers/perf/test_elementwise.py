"""Elementwise and data-movement models: hand-counted FLOPs and bytes per formula."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.elementwise import (
    MODELS,
    broadcast,
    parse_flag,
    parse_flags,
    parse_floats,
    parse_ints,
)

BF16, FP32, LONG = "c10::BFloat16", "float", "long int"


def work(name: str, dims=(), types=(), concrete=(), strides=()):
    args = OpArgs(name, tuple(dims), tuple(types), tuple(strides), tuple(concrete))
    return MODELS[name].forward(args)


# --- concrete-input parsers -------------------------------------------------------------------


def test_int_lists_parse_from_trace_strings_without_eval() -> None:
    assert parse_ints("[-1, -2]") == (-1, -2)
    assert parse_ints("1") == (1,)
    assert parse_ints("[]") == ()
    assert parse_ints("") is None
    assert parse_ints("None") is None


def test_non_integer_dim_text_is_unsupported() -> None:
    with pytest.raises(Unsupported):
        parse_ints("[a]")


def test_flags_parse_false_as_false() -> None:
    assert parse_flag("False") is False
    assert parse_flag("True") is True
    assert parse_flag("") is None
    assert parse_flags("[True, False, True]") == (True, False, True)
    assert parse_floats("[2., 1.5]") == (2.0, 1.5)


def test_broadcast_follows_numpy_rules_and_rejects_mismatches() -> None:
    assert broadcast((4, 1, 3), (5, 1)) == (4, 5, 3)
    assert broadcast((), (2, 3)) == (2, 3)
    with pytest.raises(Unsupported):
        broadcast((2, 3), (4, 3))


# --- TraceLens's UnaryElementwise -----------------------------------------------------------


def test_copy_counts_one_flop_per_element_and_both_dtypes() -> None:
    w = work(
        "aten::copy_",
        [(2, 3), (2, 3), ()],
        [BF16, FP32, "Scalar"],
        ["", "", "False"],
        [(3, 1), (1, 2), ()],
    )
    assert (w.flops, w.bytes) == (6, 6 * (2 + 4))
    assert w.compute_spec == "vector_bf16"
    assert w.params == {
        "op_shape": (2, 3),
        "dtype_in_out": (BF16, FP32),
        "stride_input": (3, 1),
        "stride_output": (1, 2),
    }


def test_unary_without_output_tensor_writes_the_input_dtype() -> None:
    w = work("aten::silu", [(16, 559, 2816)], [BF16], [""])
    assert (w.flops, w.bytes) == (25_186_304, 25_186_304 * 4)
    assert w.params["dtype_in_out"] == (BF16, None)


def test_unary_of_unsized_dtype_has_unknown_bytes() -> None:
    w = work("aten::neg", [(4,)], ["c10::complex<double>"], [""])
    assert (w.flops, w.bytes, w.precision) == (4, None, None)


def test_replication_pad_grows_innermost_dims_first() -> None:
    # (1, 2, 4, 4) padded [left 1, right 1, top 2, bottom 2] -> (1, 2, 8, 6) = 96 elements
    w = work(
        "aten::replication_pad2d", [(1, 2, 4, 4), ()], [BF16, "ScalarList"], ["", "[1, 1, 2, 2]"]
    )
    assert w.params["output_shape"] == (1, 2, 8, 6)
    assert (w.flops, w.bytes) == (96, (32 + 96) * 2)


def test_upsample_nearest_takes_output_size_from_concrete_inputs() -> None:
    w = work(
        "aten::upsample_nearest1d",
        [(1, 768, 8), (), ()],
        [BF16, "ScalarList", ""],
        ["", "[128]", ""],
    )
    assert w.params["output_shape"] == (1, 768, 128)
    assert (w.flops, w.bytes) == (98_304, (6_144 + 98_304) * 2)


def test_upsample_nearest_falls_back_to_scale_factors() -> None:
    as_list = work(
        "aten::upsample_nearest2d",
        [(1, 3, 4, 4), (), ()],
        [BF16, "", "ScalarList"],
        ["", "", "[2., 2.]"],
    )
    as_scalars = work(
        "aten::upsample_nearest2d",
        [(1, 3, 4, 4), (), (), ()],
        [BF16, "ScalarList", "Scalar", "Scalar"],
        ["", "[]", "2.", "2."],
    )
    assert as_list.params["output_shape"] == as_scalars.params["output_shape"] == (1, 3, 8, 8)
    assert (as_list.flops, as_list.bytes) == (192, (48 + 192) * 2)


# --- TraceLens's BinaryElementwise ----------------------------------------------------------


def test_binary_scalar_operand_is_one_element_and_output_takes_input_0_dtype() -> None:
    w = work("aten::mul", [(4,), ()], [BF16, "double"], ["", ""])
    assert (w.flops, w.bytes) == (4, 4 * 2 + 8 + 4 * 2)


def test_binary_of_two_tensors_writes_the_wider_dtype() -> None:
    w = work("aten::add_", [(1, 3), (3,), ()], [BF16, FP32, "Scalar"], ["", "", "1"])
    assert (w.flops, w.bytes) == (3, 3 * 2 + 3 * 4 + 3 * 4)


def test_binary_out_tensor_sets_output_dtype_and_stride() -> None:
    w = work("aten::mul", [(8,), (), (8,)], [BF16, "double", FP32], ["", "", ""], [(1,), (), (1,)])
    assert (w.flops, w.bytes) == (8, 8 * 2 + 8 + 8 * 4)
    assert w.params["dtype_in1_in2_out"] == (BF16, "double", FP32)
    assert w.params["stride_output"] == (1,)


def test_binary_broadcast_output_sets_flops() -> None:
    w = work("aten::div", [(2, 1), (1, 3)], [FP32, FP32], ["", ""])
    assert (w.flops, w.bytes) == (6, 2 * 4 + 3 * 4 + 6 * 4)


def test_binary_shapes_that_do_not_broadcast_are_unsupported() -> None:
    with pytest.raises(Unsupported):
        work("aten::add", [(2, 3), (4, 3), ()], [FP32, FP32, "Scalar"], ["", "", "1"])


# --- new pointwise models ---------------------------------------------------------------------


def test_gelu_costs_eight_flops_per_element() -> None:
    w = work("aten::gelu", [(2, 3), ()], [BF16, ""], ["", ""])
    assert (w.flops, w.bytes) == (48, 6 * 2 + 6 * 2)


def test_exp_of_a_zero_dim_tensor_is_one_element() -> None:
    w = work("aten::exp", [()], [BF16], [""])
    assert (w.flops, w.bytes) == (4, 4)


def test_comparison_writes_one_byte_per_element_and_skips_python_scalars() -> None:
    w = work("aten::eq", [(16, 559), ()], [LONG, "Scalar"], ["", "1"])
    assert (w.flops, w.bytes, w.precision) == (8_944, 8_944 * 8 + 8_944, None)


def test_where_reads_condition_and_both_values_and_writes_the_value_dtype() -> None:
    w = work("aten::where", [(1, 1, 1), (), (1, 5184, 1)], ["bool", BF16, BF16])
    assert (w.flops, w.bytes) == (5_184, 1 + 2 + 5_184 * 2 + 5_184 * 2)
    assert w.compute_spec == "vector_bf16"


def test_masked_fill_reads_self_and_mask_and_rewrites_self() -> None:
    w = work(
        "aten::masked_fill_", [(888, 2880), (888, 1), ()], [BF16, "bool", "Scalar"], ["", "", "0"]
    )
    assert (w.flops, w.bytes) == (2_557_440, 2_557_440 * 2 + 888 + 2_557_440 * 2)


def test_zero_dim_tensor_does_not_promote_the_output_dtype() -> None:
    w = work("aten::sub", [(), (1, 1, 5, 5), ()], ["double", BF16, "Scalar"], ["", "", "1"])
    assert (w.flops, w.bytes, w.precision) == (25, 8 + 25 * 2 + 25 * 2, "bf16")


def test_mse_loss_backward_does_not_read_its_out_tensor() -> None:
    n = 8 * 16 * 32 * 32
    w = work(
        "aten::mse_loss_backward",
        [(), (8, 16, 32, 32), (8, 16, 32, 32), (), (8, 16, 32, 32)],
        [FP32, FP32, FP32, "Scalar", FP32],
        ["", "", "", "1", ""],
    )
    assert (w.flops, w.bytes) == (2 * n, (1 + 2 * n) * 4 + n * 4)


def test_fill_only_writes() -> None:
    w = work("aten::fill_", [(888, 3072), ()], [BF16, "Scalar"], ["", "0."])
    assert (w.flops, w.bytes) == (2_727_936, 2_727_936 * 2)


# --- concatenation and gathers ----------------------------------------------------------------


def test_cat_output_sums_the_dim_and_bytes_need_an_element_type() -> None:
    dims = [((4, 1, 768), (4, 196, 768)), ()]
    unknown = work("aten::cat", dims, ["TensorList", "Scalar"], ["", "1"])
    known = work("aten::cat", dims, [BF16, "Scalar"], ["", "1"])
    assert unknown.params["shape_out"] == (4, 197, 768)
    assert (unknown.flops, unknown.bytes) == (605_184, None)
    assert known.bytes == 2 * 605_184 * 2


def test_cat_skips_legacy_empty_inputs_and_rejects_unrecorded_lists() -> None:
    w = work("aten::cat", [((0,), (2, 3), (2, 3)), ()], [FP32, "Scalar"], ["", "0"])
    assert w.params["shape_out"] == (4, 3)
    with pytest.raises(Unsupported):
        work("aten::cat", [(), ()], ["TensorList", "Scalar"], ["", "0"])


def test_stack_inserts_a_new_dim() -> None:
    w = work("aten::stack", [((1, 5184),) * 4, ()], ["TensorList", "Scalar"], ["", "-1"])
    assert (w.params["shape_out"], w.flops) == ((1, 5184, 4), 20_736)


def test_index_select_reads_indices_and_selected_rows() -> None:
    w = work(
        "aten::index_select", [(151936, 1024), (), (8944,)], [BF16, "Scalar", LONG], ["", "0", ""]
    )
    assert w.params["shape_out"] == (8944, 1024)
    assert (w.flops, w.bytes) == (9_158_656, 8_944 * 8 + 2 * 9_158_656 * 2)


def test_gather_output_has_the_index_shape() -> None:
    w = work(
        "aten::gather",
        [(25136, 2880), (), (888, 2880), (), (888, 2880)],
        [BF16, "Scalar", LONG, "Scalar", BF16],
        ["", "0", "", "False", ""],
    )
    assert (w.flops, w.bytes) == (2_557_440, 2_557_440 * 8 + 2 * 2_557_440 * 2)


def test_embedding_output_appends_the_row_width() -> None:
    w = work(
        "aten::embedding",
        [(151936, 1024), (16, 559), (), (), ()],
        [BF16, LONG, "Scalar", "Scalar", "Scalar"],
        ["", "", "-1", "False", "False"],
    )
    assert w.params["shape_out"] == (16, 559, 1024)
    assert w.bytes == 8_944 * 8 + 2 * 9_158_656 * 2


def test_index_without_index_shapes_is_unsupported() -> None:
    with pytest.raises(Unsupported):
        work("aten::index", [(1, 5, 768), ()], [BF16, ""], ["", ""])


def test_scatter_in_place_writes_index_entries_and_out_of_place_copies_self() -> None:
    dims, types = [(10, 20), (), (10, 5), (10, 5)], [FP32, "Scalar", LONG, FP32]
    in_place = work("aten::scatter_", dims, types, ["", "1", "", ""])
    copy = work("aten::scatter", dims, types, ["", "1", "", ""])
    assert (in_place.flops, in_place.bytes) == (50, 50 * 8 + 50 * 4 + 50 * 4)
    assert (copy.flops, copy.bytes) == (250, 800 + 2 * 200 * 4)


# --- registry -------------------------------------------------------------------------------


def test_tracelens_op_lists_are_all_registered() -> None:
    unary = {"aten::copy", "aten::copy_", "aten::clamp_min", "aten::clamp_min_", "aten::sigmoid"}
    unary |= {"aten::clamp_max", "aten::clamp_max_", "aten::rsqrt", "aten::silu", "aten::neg"}
    unary |= {"aten::pow", "aten::replication_pad3d", "aten::upsample_nearest3d"}
    binary = {"aten::add", "aten::add_", "aten::mul", "aten::mul_", "aten::div", "aten::div_"}
    binary |= {"aten::sigmoid_backward", "aten::threshold_backward", "LigerSiLUMulFunction"}
    assert unary | binary <= set(MODELS)


def test_every_model_runs_on_the_vector_unit() -> None:
    w = work("aten::tanh", [(4, 768)], [BF16], [""])
    assert (w.unit, w.flops, w.bytes) == ("vector", 4 * 3072, 3072 * 4)


def test_index_with_recovered_index_shapes_reads_indices_rows_and_writes_output() -> None:
    """op_context fills in the indices traces leave out: self (32, 2880) bf16, one int64
    index of 32 -> output (32, 2880) = 92,160 elements; bytes 32·8 + 2·92,160·2 = 368,896
    (int32 indices: 32·4 + 368,640)."""
    w = work("aten::index", [(32, 2880), ((32,),)], [BF16, LONG], ["", ""])
    assert (w.flops, w.bytes) == (92_160, 368_896)
    w32 = work("aten::index", [(32, 2880), ((32,),)], [BF16, "int"], ["", ""])
    assert w32.bytes == 128 + 368_640
