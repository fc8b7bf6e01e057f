"""Rows whose FLOPs or bytes depend on values the trace did not record are unmodelled, with
the reason (docs/perf-models.md#unmodelled), never modelled from guessed defaults."""

from __future__ import annotations

import json

import pytest

from rooflens.analyzers.perf import conv, elementwise, registry
from rooflens.analyzers.perf.base import (
    SHAPES_NOT_RECORDED,
    TENSOR_LIST_WITHOUT_SHAPES,
    Unrecorded,
    parse_args,
)
from rooflens.analyzers.synthetic.cases import C_IN, C_OUT, CONV_FLOPS, HW, K, N

BF16 = "c10::BFloat16"
X, W = [N, C_IN, HW, HW], [C_OUT, C_IN, K, K]
CONV_DIMS = json.dumps([X, W, [], [], [], [], [], [], []])
CONV_TYPES = json.dumps([BF16, BF16, "", "ScalarList", "ScalarList", "ScalarList", "Scalar",
                         "ScalarList", "Scalar"])  # fmt: skip
# the same convolution as the trace records it today: stride 2, padding 1, dilation 1
CONV_VALUES = json.dumps(["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])


def test_an_op_without_input_dims_is_unrecorded_not_a_scalar() -> None:
    # binary() reads a missing shape as a scalar; the shared check stops it first
    args = parse_args("aten::add", None, None, None, None)
    with pytest.raises(Unrecorded, match=f"^{SHAPES_NOT_RECORDED}$"):
        args.check_recorded()
    with pytest.raises(Unrecorded, match=f"^{SHAPES_NOT_RECORDED}$"):
        args.shape(0)


def test_an_op_with_no_inputs_recorded_as_empty_is_recorded() -> None:
    args = parse_args("aten::empty_like", "[]", "[]", None, "[]")
    args.check_recorded()  # an empty list is a record of no inputs, not a missing one
    assert args.shapes_recorded and args.values_recorded


def test_a_tensor_list_without_shapes_is_unrecorded() -> None:
    args = parse_args("aten::cat", json.dumps([[], []]), json.dumps(["TensorList", "Int"]),
                      None, json.dumps(["", "0"]))  # fmt: skip
    with pytest.raises(Unrecorded, match=f"^{TENSOR_LIST_WITHOUT_SHAPES}$"):
        args.check_recorded()
    with pytest.raises(Unrecorded, match=f"^{TENSOR_LIST_WITHOUT_SHAPES}$"):
        elementwise.concat(args)


def test_a_convolution_without_concrete_inputs_is_unrecorded() -> None:
    args = parse_args("aten::convolution", CONV_DIMS, CONV_TYPES, None, None)
    args.check_recorded()  # its shapes are there
    reason = "convolution stride/padding/dilation not recorded (no Concrete Inputs)"
    for name in ("aten::convolution", "aten::_convolution", "aten::convolution_backward"):
        model = registry.model_for(name)
        assert model is not None
        with pytest.raises(Unrecorded) as raised:
            args.check_recorded(model.needs_values)
        assert str(raised.value) == reason


@pytest.mark.parametrize(
    ("name", "dims", "types", "reason"),
    [
        # layer_norm(x, normalized_shape, w, b, eps): the normalised size is a value
        ("aten::layer_norm", [[8, 512, 1024], [], [1024], [1024], []],
         [BF16, "ScalarList", BF16, BF16, "Scalar"], "normalisation normalized shape"),
        # sum(x, dim, keepdim, dtype): the output size depends on dim and keepdim
        ("aten::sum", [[8, 512, 1024], [], [], []], [BF16, "ScalarList", "Scalar", ""],
         "reduction dims"),
    ],
)  # fmt: skip
def test_models_that_read_values_name_them(name, dims, types, reason) -> None:
    args = parse_args(name, json.dumps(dims), json.dumps(types), None, None)
    model = registry.model_for(name)
    assert model is not None
    with pytest.raises(Unrecorded, match=f"^{reason} not recorded \\(no Concrete Inputs\\)$"):
        args.check_recorded(model.needs_values)


def test_the_same_convolution_with_its_values_is_modelled() -> None:
    args = parse_args("aten::convolution", CONV_DIMS, CONV_TYPES, None, CONV_VALUES)
    work = conv.convolution(args)
    # 2 · C_in · 3 · 3 per output element, output (32, 128, 56, 56)
    assert work.flops == CONV_FLOPS == 2 * 64 * 9 * 32 * 128 * 56 * 56
