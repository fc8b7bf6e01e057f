"""`call_stack_full` and `entry_point` (perf_report.md §2.7) on hand-built trees."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.report.stacks import NOT_FOUND, call_stack_full, entry_point

# uid: name, parent, is cpu_op
TREE = [
    ("nn.Module: Model_0", -1, False),  # 0
    ("models/net.py(20): forward", 0, False),  # 1
    ("<built-in method linear of type object>", 1, False),  # 2: no '/', '::': dropped
    ("aten::linear", 2, True),  # 3
    ("aten::mm", 3, True),  # 4
    ("cudaLaunchKernel", 4, False),  # 5: runtime call: dropped
    ("gemm_kernel", 5, False),  # 6
    ("cudaLaunchKernel", 3, False),  # 7: linear's own launch
    ("bias_kernel", 7, False),  # 8
    ("cudaLaunchKernel", 4, False),  # 9
    ("gemm_kernel", 9, False),  # 10: same path and name as 6
    ("nn.Module: Qwen2_5Attention_12", 1, False),  # 11
    ("aten::relu", 11, True),  # 12
    ("cudaLaunchKernel", 12, False),  # 13
    ("relu_kernel", 13, False),  # 14
]
NAMES = np.array([n for n, _, _ in TREE], dtype=object)
PARENT = np.array([p for _, p, _ in TREE])
IS_CPU_OP = np.array([c for _, _, c in TREE])


def stack(op: int, kernels: list[int]):
    return call_stack_full(PARENT, NAMES, IS_CPU_OP, op, kernels)


def test_single_kernel_is_appended_flat_after_the_kept_frames():
    assert stack(4, [6]) == [
        "nn.Module: Model",
        "models/net.py(20): forward",
        "aten::linear",
        "aten::mm",
        "gemm_kernel",
    ]


def test_kernels_with_the_same_path_count_once():
    assert stack(4, [6, 10]) == stack(4, [6])


def test_several_distinct_tails_become_sub_lists_below_the_op():
    assert stack(3, [6, 8]) == [
        "nn.Module: Model",
        "models/net.py(20): forward",
        "aten::linear",
        ["aten::mm", "gemm_kernel"],
        ["bias_kernel"],
    ]


def test_only_the_trailing_module_counter_is_removed():
    assert stack(12, [14]) == [
        "nn.Module: Model",
        "models/net.py(20): forward",
        "nn.Module: Qwen2_5Attention",
        "aten::relu",
        "relu_kernel",
    ]


def test_a_kernel_not_under_the_op_is_appended_by_name_alone():
    # its launch call is not a kept frame, so only the kernel name follows the op
    assert stack(12, [6]) == [
        "nn.Module: Model",
        "models/net.py(20): forward",
        "nn.Module: Qwen2_5Attention",
        "aten::relu",
        "gemm_kernel",
    ]


# --- entry_point ---------------------------------------------------------------------------

OUTWARD = [
    "train.py(50): step",
    "models/net.py(20): forward",
    "torch/nn/modules/module.py(1750): _wrapped_call_impl",
    "torch/nn/modules/module.py(1762): _call_impl",
    "nn.Module: Linear",
    "lib/hooks.py(7): _call_impl",
    "lib/patch.py(9): wrapper",
    "<built-in method mm of type object at 0x1>",
    "torch/_tensor.py(40): __torch_function__",
    "aten::mm",
    "gemm_kernel",
]


def test_entry_point_outward_skips_framework_wrappers():
    assert entry_point(OUTWARD, "aten::mm") == "models/net.py(20): forward"


def test_entry_point_inward_prefers_a_deeper_frame_named_after_the_op():
    frames = [
        "models/attn.py(10): forward",
        "my_lib::fused_attn",
        "my_lib/kernels.py(40): launch",
        "my_lib/kernels.py(41): Fused_Attn_impl",  # case-insensitive, contains the local name
        "fused_kernel",
    ]
    assert entry_point(frames, "my_lib::fused_attn") == "my_lib/kernels.py(41): Fused_Attn_impl"


def test_entry_point_inward_needs_a_python_frame():
    frames = ["models/attn.py(10): forward", "my_lib::fused_attn", "my_lib::fused_attn_impl"]
    assert entry_point(frames, "my_lib::fused_attn") == "models/attn.py(10): forward"


def test_entry_point_reads_only_the_top_level_of_a_nested_stack():
    frames = ["models/net.py(20): forward", "aten::linear", ["aten::mm", "k"], ["k2"]]
    assert entry_point(frames, "aten::linear") == "models/net.py(20): forward"
    assert entry_point(frames, "aten::mm") == NOT_FOUND


@pytest.mark.parametrize(
    "frames",
    [
        ["models/net.py(20): forward", "aten::add"],  # op absent
        ["torch/nn/modules/module.py(1762): _call_impl", "nn.Module: Net", "aten::mm"],
        ["aten::linear", "aten::mm"],  # no Python frames at all
    ],
)
def test_entry_point_not_found(frames):
    assert entry_point(frames, "aten::mm") == "Not found"


def test_entry_point_of_a_call_stack_built_from_the_tree():
    assert entry_point(stack(4, [6]), "aten::mm") == "models/net.py(20): forward"
