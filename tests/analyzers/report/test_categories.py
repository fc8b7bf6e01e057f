"""Op categories (perf_report.md §5.1): the packaged table and user TOML files."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.categories import CategoryFileError, default_table, load_table

ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"
REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"
MULTI_TENSOR = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>"


@pytest.mark.parametrize(
    ("op", "kernel", "category"),
    [
        ("aten::mm", None, "GEMM"),
        ("aten::addmm", "ampere_bf16_gemm", "GEMM"),
        ("aten::convolution_backward", None, "CONV_bwd"),
        ("aten::_scaled_dot_product_flash_attention", None, "SDPA_fwd"),
        ("aten::native_layer_norm", None, "NORM_fwd"),
        ("aten::mul", None, "elementwise"),
        ("aten::sum", None, "reduce"),
        # an exact name wins over the kernel fallback
        ("aten::mm", ELEMENTWISE, "GEMM"),
        ("triton_poi_fused_add_0", None, "triton"),
        ("triton_red_fused_sum_1", ELEMENTWISE, "triton"),  # pattern before kernel fallback
        ("record_param_comms", None, "record_param_comms"),
        ("aten::relu", ELEMENTWISE, "elementwise"),
        ("aten::argmax", REDUCE, "reduce"),
        ("aten::_foreach_add_", MULTI_TENSOR, "multi_tensor_apply"),
        # the fallback needs the `void at::native` prefix
        ("aten::relu", "at::native::vectorized_elementwise_kernel", "other"),
        ("aten::_softmax", "void cunn_SoftMaxForward<4>", "other"),
        ("aten::relu", None, "other"),
        ("my::op", "", "other"),
        ("not_triton_op", None, "other"),  # `^triton` is anchored
        # cuDNN / MIOpen convolution variants (docs/deviations.md)
        ("aten::cudnn_convolution_backward_input", None, "CONV_bwd"),
        ("aten::cudnn_convolution_backward_weight", None, "CONV_bwd"),
        ("aten::cudnn_convolution_transpose", None, "CONV_fwd"),
        ("aten::cudnn_convolution_transpose_backward_input", None, "CONV_bwd"),
        ("aten::cudnn_convolution_relu", None, "CONV_fwd"),
        ("aten::miopen_convolution_backward_weight", None, "CONV_bwd"),
        ("aten::miopen_convolution_transpose", None, "CONV_fwd"),
        ("aten::miopen_depthwise_convolution", None, "CONV_fwd"),
        ("aten::miopen_depthwise_convolution_backward_input", None, "CONV_bwd"),
        ("aten::cudnn_convolution", None, "CONV_fwd"),  # exact entry
    ],
)
def test_default_table_resolution_order(op, kernel, category):
    assert default_table().category(op, kernel) == category


def test_default_table_lists_other_last():
    labels = default_table().categories()
    assert labels[-1] == "other"
    assert {"GEMM", "triton", "elementwise", "reduce", "multi_tensor_apply"} <= set(labels)
    assert labels.count("other") == 1


def write(tmp_path, text: str, name: str = "cats.toml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_user_file_adds_a_category_and_moves_an_existing_op(tmp_path):
    path = write(
        tmp_path,
        """
[categories.MyAttention]
ops = ["my_lib::fused_attn"]

[categories.reduce]
ops = ["aten::mm"]

[[patterns]]
regex = "^custom::"
category = "Custom"

[[kernel_fallbacks]]
prefix = "void at::native"
contains = "vectorized"
category = "vectorized"
""",
    )
    table = load_table(path)
    assert table.category("my_lib::fused_attn") == "MyAttention"
    assert table.category("aten::mm") == "reduce"  # user entries win
    assert table.category("aten::bmm") == "GEMM"  # the rest of the default table stays
    assert table.category("custom::thing") == "Custom"
    assert table.category("triton_poi_fused_0") == "triton"
    assert table.category("aten::relu", ELEMENTWISE) == "vectorized"  # user fallback first
    assert table.category("aten::argmax", REDUCE) == "reduce"
    assert "MyAttention" in table.categories()
    # the packaged table is not changed by loading a user file
    assert default_table().category("aten::mm") == "GEMM"
    assert load_table(None) is default_table()


@pytest.mark.parametrize(
    ("text", "entry"),
    [
        ('[[patterns]]\nregex = "(unclosed"\ncategory = "x"\n', "patterns[0].regex"),
        (
            '[[patterns]]\nregex = "^a"\ncategory = "x"\n[[patterns]]\nregex = "^b"\n',
            "patterns[1] needs regex and category",
        ),
        ('[categories.Mine]\nops = "aten::mm"\n', "categories.Mine.ops"),
        ("[categories.Mine]\nops = [1, 2]\n", "categories.Mine.ops"),
        ('[categories]\nMine = "aten::mm"\n', "categories.Mine.ops"),
        ("categories = 3\n", "[categories]"),
        (
            '[[kernel_fallbacks]]\nprefix = "void"\ncategory = "x"\n',
            "kernel_fallbacks[0] needs prefix, contains and category",
        ),
        ("this is = not [toml\n", "not valid TOML"),
    ],
)
def test_malformed_user_file_names_the_file_and_the_entry(tmp_path, text, entry):
    path = write(tmp_path, text)
    with pytest.raises(CategoryFileError) as caught:
        load_table(path)
    message = str(caught.value)
    assert str(path) in message
    assert entry in message


def test_missing_user_file_is_a_category_file_error(tmp_path):
    path = tmp_path / "nowhere.toml"
    with pytest.raises(CategoryFileError, match="not found") as caught:
        load_table(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("key", ["patterns", "kernel_fallbacks"])
def test_a_non_array_pattern_section_is_a_category_file_error(tmp_path, key):
    path = write(tmp_path, f"{key} = 5\n")
    with pytest.raises(CategoryFileError) as caught:
        load_table(path)
    assert str(path) in str(caught.value)
    assert key in str(caught.value)
