"""Convolution perf models (perf_report.md §6.5): hand-counted FLOPs and bytes, and each fix."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.conv import MODELS, parse_literal

BF16, FP32 = "c10::BFloat16", "float"
LIST, SCALAR = "ScalarList", "Scalar"


def conv_args(
    x,
    w,
    bias=(),
    *,
    stride="[1, 1]",
    padding="[0, 0]",
    dilation="[1, 1]",
    transposed="False",
    out_pad="[0, 0]",
    groups="1",
    types=None,
):
    """aten::convolution args: 9 inputs, as the profiler records them."""
    types = types or (BF16, BF16, BF16 if bias else "")
    dims = (x, w, bias, (), (), (), (), (), ())
    concrete = ("", "", "", stride, padding, dilation, transposed, out_pad, groups)
    all_types = (*types, LIST, LIST, LIST, SCALAR, LIST, SCALAR)
    return OpArgs("aten::convolution", dims, all_types, (), concrete)


def forward(args):
    return MODELS[args.name].forward(args)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("[1, 1]", (1, 1)),
        ("[2]", (2,)),
        ("[]", ()),
        ("3", 3),
        ("True", True),
        ("false", False),
        ("0.", 0.0),
        ("-1", -1),
        ("[True, True, False]", (True, True, False)),
        ("", None),
        ("None", None),
    ],
)
def test_parse_literal_reads_concrete_inputs(text, value):
    assert parse_literal(text) == value


@pytest.mark.parametrize("text", ["__import__('os')", "[1, os]", "1 + 1"])
def test_parse_literal_never_evaluates_code(text):
    with pytest.raises(Unsupported, match="cannot read"):
        parse_literal(text)


def test_conv2d_worked_example_owlv2_patch_embedding():
    w = forward(conv_args((1, 3, 1008, 1008), (1024, 3, 14, 14), stride="[14, 14]"))
    # out (1, 1024, 72, 72) = 5,308,416; 2·(3·14·14)·5,308,416
    assert w.flops == 6_242_697_216
    assert w.bytes == (3_048_192 + 602_112 + 5_308_416) * 2  # 17,917,440 B = 17.0874 MiB
    assert (w.unit, w.compute_spec) == ("matrix", "matrix_bf16")
    assert w.params == {
        "convNd": "conv2d",
        "input_shape": (1, 3, 1008, 1008),
        "filter_shape": (1024, 3, 14, 14),
        "dtype_input_weight": (BF16, BF16),
        "input_stride": None,
        "weight_stride": None,
        "bias": False,
        "stride": (14, 14),
        "padding": (0, 0),
        "dilation": (1, 1),
        "transposed_conv": False,
        "output_padding": (0, 0),
        "groups": 1,
    }


def test_conv_bias_tensor_is_detected_and_adds_flops_and_bytes():
    w = forward(conv_args((1, 2, 4, 4), (3, 2, 3, 3), bias=(3,), padding="[1, 1]"))
    # out (1, 3, 4, 4) = 48; TraceLens (len(Input Dims) == 3) would see no bias
    assert w.params["bias"] is True
    assert w.flops == 2 * 18 * 48 + 48  # 1776
    assert w.bytes == (32 + 54 + 48) * 2 + 3 * 2  # 274


def test_single_values_broadcast_to_every_spatial_dim():
    w = forward(conv_args((1, 1, 5, 5), (1, 1, 3, 3), stride="2", padding="0", dilation="[1]"))
    assert w.params["stride"] == (2, 2)
    assert w.params["padding"] == (0, 0)
    assert w.params["dilation"] == (1, 1)
    assert w.flops == 2 * 9 * 4  # out (1, 1, 2, 2)


def test_empty_concrete_inputs_take_the_defaults():
    args = conv_args((1, 1, 5, 5), (1, 1, 3, 3), stride="", padding="", dilation="")
    args = OpArgs(args.name, args.dims, args.types, (), ("",) * 9)
    w = forward(args)
    assert (w.params["stride"], w.params["padding"], w.params["dilation"]) == (
        (1, 1),
        (0, 0),
        (1, 1),
    )
    assert (w.params["transposed_conv"], w.params["groups"]) == (False, 1)
    assert w.flops == 2 * 9 * 9  # out 3×3


def test_dilation_widens_the_kernel_reach():
    w = forward(conv_args((1, 1, 7, 7), (1, 1, 3, 3), dilation="[2, 2]"))
    assert w.flops == 2 * 9 * 9  # (7 - 2·2 - 1)/1 + 1 = 3 -> out 3×3


def test_conv1d_and_conv3d_are_named_by_input_rank():
    spatial_1d = {"stride": "[1]", "padding": "[1]", "dilation": "[1]", "out_pad": "[0]"}
    one = forward(conv_args((2, 4, 10), (8, 4, 3), **spatial_1d))
    assert one.params["convNd"] == "conv1d"
    assert one.flops == 2 * 12 * (2 * 8 * 10)
    spatial_3d = {"stride": "1", "padding": "0", "dilation": "1", "out_pad": "0"}
    three = forward(conv_args((1, 1, 4, 4, 4), (2, 1, 3, 3, 3), **spatial_3d))
    assert three.params["convNd"] == "conv3d"
    assert three.flops == 2 * 27 * (2 * 2 * 2 * 2)


def test_grouped_conv_counts_flops_through_the_weights_channel_slice():
    w = forward(conv_args((1, 4, 5, 5), (8, 2, 3, 3), groups="2"))
    assert w.flops == 2 * 18 * (8 * 3 * 3)  # w[1] = C_in/groups = 2


def test_transposed_conv_counts_input_positions_and_grouped_output_channels():
    args = conv_args(
        (1, 4, 3, 3),
        (4, 2, 3, 3),
        stride="[2, 2]",
        padding="[1, 1]",
        transposed="True",
        out_pad="[1, 1]",
        groups="2",
    )
    w = forward(args)
    # spatial (3 - 1)·2 - 2 + 2 + 1 + 1 = 6; channels w[1]·groups = 4 -> out (1, 4, 6, 6) = 144
    assert w.params["transposed_conv"] is True
    assert w.flops == 36 * 2 * 18  # prod(x)·2·prod(w[1:])
    assert w.bytes == (36 + 72 + 144) * 2  # TraceLens (channels w[1] = 2): 360


def test_mixed_input_and_weight_dtypes_use_each_tensors_size():
    args = conv_args((1, 2, 4, 4), (3, 2, 3, 3), padding="[1, 1]", types=(FP32, BF16, ""))
    w = forward(args)  # TraceLens rejects mixed dtypes
    assert w.bytes == 32 * 4 + 54 * 2 + 48 * 4
    assert w.precision == "fp32"


def test_backward_of_a_forward_conv_is_twice_the_conv_plus_the_bias_gradient():
    model = MODELS["aten::convolution"]
    assert model.bwd_category == "CONV_bwd"
    args = conv_args((1, 2, 4, 4), (3, 2, 3, 3), bias=(3,), padding="[1, 1]")
    w = model.backward(args)
    assert w.flops == 2 * (2 * 18 * 48) + 48  # 3504
    # grad-input and grad-weight: 2·(out + w + x)·2; grad-bias: read out, write C_out, in BYTES
    assert w.bytes == 2 * (48 + 54 + 32) * 2 + (48 + 3) * 2  # 638; TraceLens adds 51 -> 587


def bwd_args(grad_out, x, w, bias_sizes="[0]", *, mask="[True, True, False]", types=None):
    """aten::convolution_backward args (11 inputs), stride 1, padding 1."""
    types = types or (BF16, BF16, BF16)
    dims = (grad_out, x, w, (), (), (), (), (), (), (), ())
    concrete = ("", "", "", bias_sizes, "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", mask)
    all_types = (*types, LIST, LIST, LIST, LIST, SCALAR, LIST, SCALAR, LIST)
    return OpArgs("aten::convolution_backward", dims, all_types, (), concrete)


def test_convolution_backward_worked_example_resnet_block():
    w = forward(bwd_args((10, 64, 56, 56), (10, 64, 56, 56), (64, 64, 3, 3)))
    assert w.flops == 4_624_220_160  # 2 · 2·576·2,007,040
    assert w.bytes == 2 * (2_007_040 + 36_864 + 2_007_040) * 2  # 16,203,776 B = 15.453125 MiB
    assert w.params["bias"] is False
    assert w.params["input_shape"] == (10, 64, 56, 56)
    assert w.params["stride"] == (1, 1)


def test_convolution_backward_bias_from_output_mask_in_bytes():
    args = bwd_args((1, 3, 4, 4), (1, 2, 4, 4), (3, 2, 3, 3), "[3]", mask="[True, True, True]")
    w = forward(args)
    assert w.params["bias"] is True
    assert w.flops == 2 * (2 * 18 * 48) + 48
    assert w.bytes == 2 * (48 + 54 + 32) * 2 + (48 + 3) * 2


def test_convolution_backward_without_grad_bias_ignores_bias_sizes():
    args = bwd_args((1, 3, 4, 4), (1, 2, 4, 4), (3, 2, 3, 3), "[3]", mask="[True, True, False]")
    w = forward(args)
    assert w.params["bias"] is False
    assert w.flops == 2 * (2 * 18 * 48)


def test_convolution_backward_sizes_grad_output_at_its_own_dtype():
    args = bwd_args((1, 3, 4, 4), (1, 2, 4, 4), (3, 2, 3, 3), types=(FP32, BF16, BF16))
    assert forward(args).bytes == 2 * (48 * 4 + 54 * 2 + 32 * 2)


def test_underscore_convolution_carries_the_same_leading_args():
    x, w = (1, 16, 32, 32), (512, 16, 3, 3)
    dims = (x, w, (512,), *((),) * 10)
    types = (BF16, BF16, BF16, LIST, LIST, LIST, SCALAR, LIST, *(SCALAR,) * 5)
    concrete = ("", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1")
    concrete += ("False", "False", "True", "True")
    work = MODELS["aten::_convolution"].forward(
        OpArgs("aten::_convolution", dims, types, (), concrete)
    )
    assert work.flops == 2 * 144 * (512 * 32 * 32) + 512 * 32 * 32
    assert MODELS["aten::_convolution"].bwd_category == "CONV_bwd"


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (conv_args((4, 3), (8, 3)), "not a conv1d/2d/3d"),
        (conv_args((1, 1, 2, 2), (1, 1, 3, 3)), "kernel larger than padded input"),
        (conv_args((1, 1, 5, 5), (1, 1, 3, 3), stride="[1, 1, 1]"), "is not 2 ints"),
        (conv_args((1, 1, 5, 5), (1, 1, 3, 3), transposed="maybe"), "cannot read"),
        (conv_args((1, 1, 5, 5), (1, 1, 3, 3), groups="0"), "positive int"),
    ],
)
def test_unusable_args_are_unsupported_with_a_reason(args, reason):
    with pytest.raises(Unsupported, match=reason):
        forward(args)
