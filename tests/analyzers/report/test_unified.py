"""Rule B and synthetic ops (perf_report.md §4.2-4.3): which op owns each kernel in the
unified table. `MODELLED` stands in for the perf-model registry."""

from __future__ import annotations

from rooflens.analyzers.perf import registry
from rooflens.analyzers.report.unified import attribute_unified

MODELLED = frozenset({"aten::addmm", "aten::mm", "aten::copy_"})
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"


def rows(model, has_model=MODELLED.__contains__):
    """{op name: (UID, source uid, sorted kernel names)} of the unified attribution."""
    unified = attribute_unified(model, has_model)
    names = model.events["name"].astype(str).to_numpy()
    out = {}
    for i, op in unified.ops.iterrows():
        kernels = unified.kernels.loc[unified.kernels["op"] == i, "gpu"]
        assert op["name"] not in out
        out[op["name"]] = (op["uid"], op["source_uid"], sorted(names[kernels]))
    return out


def synthetic(owner: str, kernel: str) -> str:
    return f"{owner}->{kernel} (Synthetic Op)"


def test_modelled_op_is_taken_whole_with_its_modelled_children(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::addmm", 0, 100),
            *tb.launch(1, 5, 200, 10, kernel_name="gemm_kernel"),
            tb.cpu_op("aten::copy_", 50, 20),
            *tb.launch(2, 55, 220, 5, kernel_name="copy_kernel"),
        ]
    )
    addmm = tb.uid(model, "aten::addmm")
    assert rows(model) == {"aten::addmm": (addmm, addmm, ["copy_kernel", "gemm_kernel"])}


def test_leaf_op_launching_directly_is_taken(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::relu", 0, 50),
            tb.python_function("torch/_ops.py(10): __call__", 2, 40),  # leaf through a frame
            *tb.launch(1, 5, 200, 10, kernel_name=ELEMENTWISE),
        ]
    )
    relu = tb.uid(model, "aten::relu")
    assert rows(model) == {"aten::relu": (relu, relu, [ELEMENTWISE])}


def test_op_above_a_modelled_op_is_looked_through_and_its_own_kernel_is_synthetic(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::linear", 0, 100),
            tb.cpu_op("aten::t", 2, 3),  # CPU only
            tb.cpu_op("aten::mm", 10, 30),
            *tb.launch(1, 15, 200, 10, kernel_name="gemm_kernel"),
            *tb.launch(2, 60, 220, 5, kernel_name="bias_kernel"),
        ]
    )
    mm, linear = tb.uid(model, "aten::mm"), tb.uid(model, "aten::linear")
    bias = tb.uid(model, "bias_kernel")
    assert rows(model) == {
        "aten::mm": (mm, mm, ["gemm_kernel"]),
        # the kernel's own uid is the row's UID; the looked-through op is its source
        synthetic("aten::linear", "bias_kernel"): (bias, linear, ["bias_kernel"]),
    }


def test_op_whose_modelled_descendant_launched_is_looked_through_via_python_frames(tb):
    model = tb.model(
        [
            tb.cpu_op("my::block", 0, 100),
            tb.python_function("lib/block.py(3): inner", 5, 80),
            tb.cpu_op("aten::mm", 10, 30),
            *tb.launch(1, 15, 200, 10, kernel_name="gemm_kernel"),
        ]
    )
    mm = tb.uid(model, "aten::mm")
    assert rows(model) == {"aten::mm": (mm, mm, ["gemm_kernel"])}


def test_leaf_whose_modelled_child_launched_nothing_becomes_synthetic_ops(tb):
    model = tb.model(
        [
            tb.cpu_op("my::op", 0, 100),
            tb.cpu_op("aten::mm", 10, 5),  # modelled, but CPU only
            *tb.launch(1, 30, 200, 10, kernel_name="my_kernel"),
        ]
    )
    kernel, op = tb.uid(model, "my_kernel"), tb.uid(model, "my::op")
    assert rows(model) == {synthetic("my::op", "my_kernel"): (kernel, op, ["my_kernel"])}


def test_graph_kernel_without_an_op_becomes_a_synthetic_op_per_kernel(tb):
    model = tb.model(
        [
            *tb.graph_launch(5, 10, [("graph_k_a", 100, 10), ("graph_k_b", 120, 10)]),
            tb.kernel("stray_kernel", 300, 50),  # no parent at all: dropped
        ]
    )
    launch = tb.uid(model, "cudaGraphLaunch")
    a, b = tb.uid(model, "graph_k_a"), tb.uid(model, "graph_k_b")
    assert rows(model) == {
        synthetic("cudaGraphLaunch", "graph_k_a"): (a, launch, ["graph_k_a"]),
        synthetic("cudaGraphLaunch", "graph_k_b"): (b, launch, ["graph_k_b"]),
    }
    assert attribute_unified(model, MODELLED.__contains__).ops["synthetic"].tolist() == [
        True,
        True,
    ]


def test_leaf_op_with_a_communication_kernel_is_skipped(tb):
    model = tb.model(
        [
            tb.cpu_op("c10d::allreduce_", 0, 100),
            *tb.launch(1, 5, 200, 30, kernel_name=NCCL, stream=9),
            *tb.launch(2, 15, 200, 10, kernel_name=ELEMENTWISE),
        ]
    )
    op, kernel = tb.uid(model, "c10d::allreduce_"), tb.uid(model, ELEMENTWISE)
    # no row for the op; its non-NCCL kernel is synthetic; the NCCL kernel is nowhere
    assert rows(model) == {
        synthetic("c10d::allreduce_", ELEMENTWISE): (kernel, op, [ELEMENTWISE]),
    }


def test_op_launching_through_the_driver_is_not_a_leaf(tb):
    # TraceLens quirk: cuLaunchKernel (cuda_driver) is not walked through when looking for
    # leaves, so the op is not taken and its kernel becomes a synthetic op
    model = tb.model(
        [
            tb.cpu_op("triton_op_wrapper", 0, 50),
            tb.runtime("cuLaunchKernel", 5, 4, 1, cat="cuda_driver"),
            tb.flow("s", 1, 1, 1, 5),
            tb.flow("f", 1, 0, 7, 200),
            tb.kernel("triton_kernel", 200, 10, 1),
        ]
    )
    op, kernel = tb.uid(model, "triton_op_wrapper"), tb.uid(model, "triton_kernel")
    assert rows(model) == {
        synthetic("triton_op_wrapper", "triton_kernel"): (kernel, op, ["triton_kernel"]),
    }


def test_synthetic_op_is_named_after_the_nearest_op_with_no_execute_skipping(tb):
    model = tb.model(
        [
            tb.cpu_op("my::runner", 0, 100),
            tb.cpu_op("execute", 10, 80),
            tb.runtime("cuLaunchKernel", 45, 4, 2, cat="cuda_driver"),
            tb.flow("s", 2, 1, 1, 45),
            tb.flow("f", 2, 0, 7, 220),
            tb.kernel("driver_kernel", 220, 5, 2),
        ]
    )
    kernel, execute = tb.uid(model, "driver_kernel"), tb.uid(model, "execute")
    assert rows(model) == {
        synthetic("execute", "driver_kernel"): (kernel, execute, ["driver_kernel"]),
    }


def test_independent_roots_each_give_their_rows_and_ops_without_gpu_work_none(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::empty", 0, 5),
            tb.cpu_op("aten::mm", 10, 20),
            *tb.launch(1, 15, 200, 10, kernel_name="gemm_kernel"),
            tb.cpu_op("aten::relu", 40, 20),
            *tb.launch(2, 45, 220, 5, kernel_name=ELEMENTWISE),
        ]
    )
    unified = attribute_unified(model, MODELLED.__contains__)
    assert unified.ops["name"].tolist() == ["aten::mm", "aten::relu"]
    assert unified.ops["synthetic"].tolist() == [False, False]


def test_python_root_with_gpu_work_is_walked(tb):
    model = tb.model(
        [
            tb.python_function("train.py(10): step", 0, 100),
            tb.python_function("nn.Module: Net_0", 5, 90),
            tb.cpu_op("aten::relu", 10, 20),
            *tb.launch(1, 15, 200, 10, kernel_name=ELEMENTWISE),
            *tb.launch(2, 50, 220, 5, kernel_name="python_launched_kernel"),
        ]
    )
    relu, kernel = tb.uid(model, "aten::relu"), tb.uid(model, "python_launched_kernel")
    launch = int(model.links.launch[kernel])
    assert rows(model) == {
        "aten::relu": (relu, relu, [ELEMENTWISE]),
        # no cpu_op above the launch: named after the launch call, the kernel's parent
        synthetic("cudaLaunchKernel", "python_launched_kernel"): (
            kernel,
            launch,
            ["python_launched_kernel"],
        ),
    }


def test_real_registry_takes_mm_whole_under_linear(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::linear", 0, 100),
            tb.cpu_op("aten::addmm", 10, 30),
            *tb.launch(1, 15, 200, 10, kernel_name="gemm_kernel"),
        ]
    )
    addmm = tb.uid(model, "aten::addmm")
    assert rows(model, registry.has_model) == {"aten::addmm": (addmm, addmm, ["gemm_kernel"])}
