"""Rule A (perf_report.md §4.1): which op launched each kernel, and its busy times."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.perf.categories import default_table
from rooflens.analyzers.report.launchers import (
    attribute_launchers,
    find_launchers,
    subtree_pairs,
)

ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"
REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"


def launchers_of(model):
    return attribute_launchers(model, default_table())


# --- who is the launcher ---------------------------------------------------------------


def test_launcher_is_first_cpu_op_above_the_launch_through_python_frames_and_execute(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::mm", 0, 100),
            tb.python_function("torch/_ops.py(10): __call__", 5, 90),
            tb.cpu_op("execute", 10, 80),
            tb.python_function("ext/run.py(3): run", 15, 60),
            *tb.launch(1, 20, 200, 10, kernel_name="gemm_kernel"),
        ]
    )
    owner = find_launchers(model)
    assert owner[tb.uid(model, "gemm_kernel")] == tb.uid(model, "aten::mm")


def test_execute_alone_above_a_launch_leaves_the_launch_as_its_own_launcher(tb):
    model = tb.model(
        [tb.cpu_op("execute", 0, 50), *tb.launch(1, 10, 200, 10, kernel_name="gemm_kernel")]
    )
    owner = find_launchers(model)
    assert owner[tb.uid(model, "gemm_kernel")] == tb.uid(model, "cudaLaunchKernel")


def test_a_runtime_call_above_the_launch_stops_the_walk(tb):
    # aten::mm > cudaLaunchKernel (launched nothing) > cuLaunchKernel (the kernel's launch)
    model = tb.model(
        [
            tb.cpu_op("aten::mm", 0, 100),
            tb.runtime("cudaLaunchKernel", 10, 40, 99),
            tb.runtime("cuLaunchKernel", 15, 5, 1, cat="cuda_driver"),
            tb.flow("s", 1, 1, 1, 15),
            tb.flow("f", 1, 0, 7, 200),
            tb.kernel("gemm_kernel", 200, 10, 1),
        ]
    )
    owner = find_launchers(model)
    assert owner[tb.uid(model, "gemm_kernel")] == tb.uid(model, "cuLaunchKernel")


def test_graph_launch_without_an_op_is_one_launcher_for_all_its_kernels(tb):
    model = tb.model(
        [
            *tb.graph_launch(5, 10, [("graph_k_a", 100, 10), ("graph_k_b", 105, 10)]),
            tb.kernel("stray_kernel", 300, 50),  # no launch at all: skipped entirely
        ]
    )
    launch = tb.uid(model, "cudaGraphLaunch")
    owner = find_launchers(model)
    assert owner[tb.uid(model, "graph_k_a")] == launch
    assert owner[tb.uid(model, "graph_k_b")] == launch
    assert owner[tb.uid(model, "stray_kernel")] == -1

    inst = launchers_of(model).instances
    assert inst.index.tolist() == [launch]
    row = inst.loc[launch]
    assert row["name"] == "cudaGraphLaunch"
    assert row["op category"] == "other"
    assert row["num_kernels"] == 2
    assert row["total_direct_kernel_time"] == 15.0  # [100, 110] ∪ [105, 115]
    assert row["total_subtree_kernel_time"] == 15.0
    assert set(launchers_of(model).kernels["name"]) == {"graph_k_a", "graph_k_b"}


def test_graph_launch_under_an_op_belongs_to_that_op(tb):
    model = tb.model(
        [tb.cpu_op("aten::copy_", 0, 50), *tb.graph_launch(5, 10, [("graph_k", 100, 10)])]
    )
    assert find_launchers(model)[tb.uid(model, "graph_k")] == tb.uid(model, "aten::copy_")


# --- busy times ----------------------------------------------------------------------------


def test_communication_kernels_count_in_subtree_time_but_not_in_direct_time(tb):
    model = tb.model(
        [
            tb.cpu_op("my::fused_op", 0, 100),
            *tb.launch(1, 10, 100, 10, kernel_name="gemm_kernel"),
            *tb.launch(2, 20, 105, 20, kernel_name=NCCL, stream=9),
            tb.cpu_op("c10d::allreduce_", 200, 50),
            *tb.launch(3, 210, 400, 30, kernel_name=NCCL + "_2", stream=9),
        ]
    )
    launchers = launchers_of(model)
    inst = launchers.instances
    # the op that only launched NCCL work is no launcher row at all
    assert inst["name"].tolist() == ["my::fused_op"]
    row = inst.iloc[0]
    assert row["total_direct_kernel_time"] == 10.0
    assert row["total_subtree_kernel_time"] == 25.0  # [100, 110] ∪ [105, 125]
    assert row["num_kernels"] == 1
    assert launchers.kernels["name"].tolist() == ["gemm_kernel"]


def nested_trace(tb):
    """linear launches one kernel itself and holds an mm launching two overlapping ones."""
    return [
        tb.cpu_op("aten::linear", 0, 100),
        *tb.launch(1, 5, 200, 10, kernel_name=ELEMENTWISE),  # [200, 210]
        tb.cpu_op("aten::mm", 20, 40),
        *tb.launch(2, 25, 205, 15, kernel_name="gemm_a", stream=8),  # [205, 220]
        *tb.launch(3, 35, 215, 15, kernel_name="gemm_b", stream=9),  # [215, 230]
    ]


def test_direct_and_subtree_times_are_unions_and_nested_launchers_count_in_both(tb):
    model = tb.model(nested_trace(tb))
    inst = launchers_of(model).instances
    linear, mm = tb.uid(model, "aten::linear"), tb.uid(model, "aten::mm")
    assert inst.index.tolist() == [linear, mm]  # by launcher ts
    assert inst.loc[linear, "total_direct_kernel_time"] == 10.0
    assert inst.loc[linear, "total_subtree_kernel_time"] == 30.0  # [200, 230]
    assert inst.loc[mm, "total_direct_kernel_time"] == 25.0  # [205, 230], overlap once
    assert inst.loc[mm, "total_subtree_kernel_time"] == 25.0
    assert inst.loc[mm, "num_kernels"] == 2
    # the quirk the spec warns about: subtree sums count mm's kernels twice
    assert inst["total_subtree_kernel_time"].sum() == 55.0


def test_launcher_rows_come_in_launch_time_order_whatever_the_file_order(tb):
    model = tb.model(
        [
            tb.cpu_op("op_late", 50, 20),
            *tb.launch(2, 55, 300, 5, kernel_name="k_late"),
            tb.cpu_op("op_early", 0, 20),
            *tb.launch(1, 5, 100, 5, kernel_name="k_early"),
        ]
    )
    assert launchers_of(model).instances["name"].tolist() == ["op_early", "op_late"]


def test_kernel_table_lists_each_direct_kernel_with_its_launcher(tb):
    model = tb.model(nested_trace(tb))
    kernels = launchers_of(model).kernels
    linear, mm = tb.uid(model, "aten::linear"), tb.uid(model, "aten::mm")
    assert list(zip(kernels["name"], kernels["launcher"], strict=True)) == [
        (ELEMENTWISE, linear),
        ("gemm_a", mm),
        ("gemm_b", mm),
    ]


# --- categories ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "kernels", "category"),
    [
        ("aten::mm", ["gemm_kernel"], "GEMM"),  # exact name
        ("aten::abs", [ELEMENTWISE], "elementwise"),  # kernel-name fallback
        ("aten::argmax", [REDUCE], "reduce"),
        ("aten::cat", ["CatArrayBatchedCopy"], "other"),
        # the first kernel (by GPU time) decides, not any kernel
        ("aten::foo", ["my_kernel", ELEMENTWISE], "other"),
        ("aten::bar", [ELEMENTWISE, "my_kernel"], "elementwise"),
    ],
)
def test_launcher_category_by_name_then_first_kernel(tb, op, kernels, category):
    events = [tb.cpu_op(op, 0, 100)]
    for i, name in enumerate(kernels):
        events += tb.launch(i + 1, 10 + 10 * i, 200 + 20 * i, 5, kernel_name=name)
    inst = launchers_of(tb.model(events)).instances
    assert inst["op category"].tolist() == [category]


def test_launcher_rows_carry_the_recorded_arguments(tb):
    args = {"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}
    model = tb.model([tb.cpu_op("aten::mm", 0, 50, args=args), *tb.launch(1, 10, 100, 5)])
    row = launchers_of(model).instances.iloc[0]
    assert row["input_dims"] == "[[4,8],[8,2]]"
    assert row["input_type"] == '["float","float"]'


# --- subtree_pairs -------------------------------------------------------------------------


def test_subtree_pairs_lists_every_target_ancestor_of_every_node():
    #      0
    #     / \
    #    1   4
    #    |
    #    2
    #    |
    #    3
    parent = np.array([-1, 0, 1, 2, 0])
    target = np.array([True, False, True, False, True])
    pairs = subtree_pairs(parent, np.array([3, 4]), target)
    assert sorted(zip(pairs["ancestor"], pairs["node"], strict=True)) == [(0, 3), (0, 4), (2, 3)]
    empty = subtree_pairs(parent, np.array([], dtype=np.int64), target)
    assert empty.empty
    assert list(empty.columns) == ["ancestor", "node"]
