"""Normalisation models: hand-counted FLOPs and bytes, and the §10.23 flag fixes."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.base import OpArgs, Unsupported
from rooflens.analyzers.perf.norm import BWD_CATEGORY, MODELS

BF16, FP32 = "c10::BFloat16", "float"
X = (2, 4, 3, 3)  # N = 72, C = 4


def args(name: str, dims, types, concrete) -> OpArgs:
    return OpArgs(name, tuple(dims), tuple(types), (), tuple(concrete))


def work(name: str, dims, types, concrete):
    return MODELS[name].forward(args(name, dims, types, concrete))


def batch_norm(training: str, weight=(4,), bias=(4,)):
    dims = [X, weight, bias, (4,), (4,), (), (), (), ()]
    types = [FP32, FP32 if weight else "", FP32 if bias else "", FP32, FP32]
    types += ["Scalar"] * 4
    return work("aten::batch_norm", dims, types, ["", "", "", "", "", training, "0.1", "1e-05", ""])


# --- forward ----------------------------------------------------------------------------------


def test_batch_norm_training_false_is_parsed_as_false() -> None:
    """§10.23: TraceLens's bool('False') is True and would add 3N FLOPs and 2 stat words."""
    w = batch_norm("False")
    assert (w.flops, w.bytes) == (3 * 4 + 3 * 4 + 2 * 72, 72 * 8 + 4 * 4 * 4)
    assert w.params["is_training"] is False


def test_batch_norm_training_counts_statistics() -> None:
    w = batch_norm("True")
    assert (w.flops, w.bytes) == (12 + 3 * 72 + 12 + 2 * 72, 72 * 8 + 6 * 4 * 4)


def test_affine_and_bias_come_from_non_empty_weight_and_bias_shapes() -> None:
    """§10.23: absent optional tensors are recorded as [] and no longer count as present."""
    none = batch_norm("True", weight=(), bias=())
    weight_only = batch_norm("True", bias=())
    assert (none.bytes, weight_only.bytes) == (72 * 8 + 4 * 4 * 4, 72 * 8 + 5 * 4 * 4)
    assert (none.params["is_affine"], none.params["has_bias"]) == (False, False)
    assert (weight_only.params["is_affine"], weight_only.params["has_bias"]) == (True, False)


def test_unreadable_training_flag_is_unsupported() -> None:
    with pytest.raises(Unsupported):
        batch_norm("")


def test_instance_norm_training_comes_from_use_input_stats() -> None:
    w = work(
        "aten::instance_norm",
        [X, (), (), (), (), (), (), (), ()],
        [FP32, "", "", "", "", "Scalar", "Scalar", "Scalar", "Scalar"],
        ["", "", "", "", "", "False", "0.1", "1e-05", "True"],
    )
    assert (w.flops, w.bytes) == (12 + 12 + 2 * 72, 72 * 8 + 2 * 4 * 4)


def test_layer_norm_channels_are_the_normalized_shape() -> None:
    w = work(
        "aten::layer_norm",
        [(4, 197, 768), (), (768,), (768,), (), ()],
        [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"],
        ["", "[768]", "", "", "1e-12", "True"],
    )
    # N = 605,184, C = 768: 6C + 5N; N·(2 + 2) + 6·C·2
    assert (w.flops, w.bytes) == (3_030_528, 2_429_952)
    assert w.params == {
        "op_shape": (4, 197, 768),
        "dtype_in_out": (BF16, None),
        "stride_input": None,
        "stride_output": None,
        "num_channels": 768,
        "has_bias": True,
        "is_affine": True,
        "is_training": True,
    }


def test_group_norm_channels_are_shape_1() -> None:
    w = work(
        "aten::group_norm",
        [(8, 16, 32, 32), (), (16,), (16,), (), ()],
        [FP32, "Scalar", FP32, FP32, "Scalar", "Scalar"],
        ["", "4", "", "", "1e-05", "True"],
    )
    assert (w.flops, w.bytes, w.params["num_channels"]) == (655_456, 1_048_960, 16)


def test_rms_norm_with_weight() -> None:
    # N = 131,072, C = 1,024: 128·(2·1024 + 2) + 2N; 2·N·4 + C·4
    w = work(
        "aten::_fused_rms_norm",
        [(8, 16, 32, 32), (), (32, 32), ()],
        [FP32, "ScalarList", FP32, ""],
        ["", "[32, 32]", "", ""],
    )
    assert (w.flops, w.bytes) == (524_544, 1_052_672)
    assert (w.params["is_affine"], w.params["has_bias"]) == (True, False)


def test_rms_norm_without_weight_skips_the_scale() -> None:
    w = work(
        "aten::rms_norm",
        [(8, 16, 32, 32), (), (), ()],
        [FP32, "ScalarList", "", ""],
        ["", "[32, 32]", "", ""],
    )
    assert (w.flops, w.bytes) == (262_400 + 131_072, 1_048_576)


# --- backward ops -----------------------------------------------------------------------------


def test_batch_norm_backward_training_with_full_mask() -> None:
    n = 10 * 64 * 112 * 112
    w = work(
        "aten::native_batch_norm_backward",
        [(10, 64, 112, 112)] * 2 + [(64,)] * 5 + [()] * 3,
        [BF16] * 5 + [FP32, FP32, "Scalar", "Scalar", "ScalarList"],
        [""] * 7 + ["True", "1e-05", "[True, True, True]"],
    )
    # 9N FLOPs; N·2 + 2·N·2 + C·2 (training) + C·2 (affine) + 2·C·2 (weight and bias grads)
    assert (w.flops, w.bytes) == (9 * n, 3 * n * 2 + 4 * 64 * 2)
    assert w.params["output_mask"] == [True]


def test_batch_norm_backward_inference_adds_three_flops_per_channel() -> None:
    w = work(
        "aten::native_batch_norm_backward",
        [X, X, (4,), (), (), (4,), (4,), (), (), ()],
        [FP32, FP32, FP32, "", "", FP32, FP32, "Scalar", "Scalar", "ScalarList"],
        [""] * 7 + ["False", "1e-05", "[True, True, True]"],
    )
    # E = 18: C·(3 + 4E) = 4·75; N·4 + N·4 + C·4 (affine)
    assert (w.flops, w.bytes) == (300, 288 + 288 + 16)


def test_vendor_batch_norm_backward_counts_as_inference() -> None:
    w = work(
        "aten::miopen_batch_norm_backward",
        [(8, 16, 32, 32)] * 2 + [(16,)] * 5 + [()],
        [FP32] * 7 + ["Scalar"],
        [""] * 7 + ["1e-05"],
    )
    assert (w.flops, w.bytes) == ((3 + 4 * 8192) * 16, 1_048_576 + 64)
    assert w.params["output_mask"] == [True]


def test_layer_norm_backward_without_input_grad_uses_2e() -> None:
    w = work(
        "aten::native_layer_norm_backward",
        [(8, 16, 32, 32)] * 2 + [(), (8, 1, 1, 1), (8, 1, 1, 1), (16, 32, 32), (16, 32, 32), ()],
        [FP32, FP32, "ScalarList", FP32, FP32, FP32, FP32, "ScalarList"],
        ["", "", "[16, 32, 32]", "", "", "", "", "[False, True, True]"],
    )
    # C = 16,384, E = 8: C·(4E + 2E); N·4 + N·4 + C·4 + C·4 + 2·C·4
    assert (w.flops, w.bytes) == (786_432, 1_048_576 + 262_144)
    assert w.params["output_mask"] == [False, True, True]


def test_group_norm_backward_channels_are_shape_1_over_groups() -> None:
    w = work(
        "aten::native_group_norm_backward",
        [(8, 16, 32, 32)] * 2 + [(8, 4), (8, 4), (16,), (), (), (), (), ()],
        [FP32] * 5 + ["Scalar"] * 4 + ["ScalarList"],
        [""] * 5 + ["8", "16", "1024", "4", "[True, True, True]"],
    )
    assert (w.flops, w.bytes, w.params["num_channels"]) == (1_179_648, 1_572_928, 4)


def test_rms_norm_backward_with_weight_grad() -> None:
    w = work(
        "aten::_fused_rms_norm_backward",
        [(8, 16, 32, 32), (8, 16, 32, 32), (), (8, 16, 1, 1), (32, 32), ()],
        [FP32, FP32, "ScalarList", FP32, FP32, "ScalarList"],
        ["", "", "[32, 32]", "", "", "[True, True]"],
    )
    # N + N + 6N + (N + N) = 10N; 3·N·4 + 2·C·4
    assert (w.flops, w.bytes) == (1_310_720, 1_581_056)


# --- backward of forward ops ------------------------------------------------------------------


def test_forward_ops_expose_the_backward_formula_with_a_full_mask() -> None:
    name = "aten::layer_norm"
    a = args(
        name,
        [(4, 197, 768), (), (768,), (768,), (), ()],
        [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"],
        ["", "[768]", "", "", "1e-12", "True"],
    )
    model = MODELS[name]
    assert model.bwd_category == BWD_CATEGORY == "NORM_bwd"
    assert model.backward is not None
    w = model.backward(a)
    # N = 605,184: 9N; N·2 + 2·N·2 + C·2 + C·2 + 2·C·2
    assert (w.flops, w.bytes) == (5_446_656, 3 * 605_184 * 2 + 4 * 768 * 2)
    assert w.params["output_mask"] == [True, True, True]


def test_backward_ops_have_no_further_backward() -> None:
    assert MODELS["aten::native_layer_norm_backward"].backward is None
    assert MODELS["aten::_fused_rms_norm"].bwd_category == "NORM_bwd"


def test_aiter_groupnorm_run_follows_aten_group_norm() -> None:
    """(input, num_groups, weight, bias, eps); X = (2, 4, 3, 3): N = 72, C = 4, training,
    affine with bias. FLOPs = 3C + 3N + 3C + 2N = 24 + 360; bytes = (2N + 6C)·2 = 336."""
    w = work(
        "aiter::_groupnorm_run",
        [X, (), (4,), (4,), ()],
        [BF16, "Scalar", BF16, BF16, "Scalar"],
        ["", "2", "", "", "1e-06"],
    )
    assert (w.flops, w.bytes) == (384, 336)
