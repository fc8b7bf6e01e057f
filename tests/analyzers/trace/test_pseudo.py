"""Pseudo ops above triton_kernels matmul_ogs launches (perf_report.md §2.9), hand-written traces.

Layout as vLLM's gpt-oss MoE records it: under `vllm::moe_forward`, the router's `TopK` op,
then two `triton_kernels/matmul_ogs.py(352): matmul_ogs` frames, each canonicalising the
activation and the weights (an `aten::view` each) before launching `_matmul_ogs_*`; the
second also launches the finalize kernel.
"""

from __future__ import annotations

import json

import numpy as np

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.open_trace import open_trace
from rooflens.analyzers.trace.pseudo import MOE_OGS_DOWN, MOE_OGS_UP, insert_pseudo_ops

BF16, U8 = "c10::BFloat16", "unsigned char"
UP_KERNEL = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu"
DOWN_KERNEL = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
FINALIZE = "_finalize_matmul_scatter_bf16"
OGS = "triton_kernels/matmul_ogs.py(352): matmul_ogs"
CANON = "triton_kernels/matmul_ogs.py(333): _canonicalize_storage"


def view(tb, ts, dims, dtype):
    """`_canonicalize_storage` -> `<built-in method view>` -> aten::view, as Python records it."""
    return [
        tb.python_function(CANON, ts, 10),
        tb.python_function("<built-in method view of Tensor object at 0x7f>", ts + 1, 8),
        tb.cpu_op(
            "aten::view",
            ts + 2,
            5,
            args={"Input Dims": [dims, []], "Input type": [dtype, "ScalarList"]},
        ),
    ]


def moe_events(tb, t0=0.0, launch=None, topk=True):
    """One moe_forward; `launch(ts, kernel, n)` makes the launch (eager: with its kernel)."""
    events = [
        tb.cpu_op(
            "vllm::moe_forward",
            t0,
            1000,
            args={"Input Dims": [[32, 3072], [32, 32]], "Input type": [BF16, BF16]},
        )
    ]
    if topk:
        events += [
            tb.python_function("triton_kernels/topk.py(86): topk", t0 + 10, 50),
            tb.cpu_op(
                "TopK",
                t0 + 12,
                40,
                args={
                    "Input Dims": [[32, 32], [], [], [], [], [], []],
                    "Input type": [BF16, "Scalar", "Scalar", "Scalar", "Scalar", "", ""],
                    "Concrete Inputs": ["", "4", "True", "1", "True", "", ""],
                },
            ),
            *launch(t0 + 20, "_topk_forward", 1),
        ]
    events += [
        tb.python_function(OGS, t0 + 100, 200),
        *view(tb, t0 + 110, [32, 3072], BF16),
        *view(tb, t0 + 130, [32, 1536, 5888], U8),
        *launch(t0 + 150, UP_KERNEL, 2),
        tb.python_function(OGS, t0 + 400, 200),
        *view(tb, t0 + 410, [128, 2944], BF16),
        *view(tb, t0 + 430, [32, 1472, 3072], U8),
        *launch(t0 + 450, DOWN_KERNEL, 3),
        tb.python_function("triton_kernels/matmul_ogs.py(179): apply_postprocessing", t0 + 500, 50),
        *launch(t0 + 510, FINALIZE, 4),
    ]
    return events


def eager_launch(tb):
    def launch(ts, kernel, n):
        return tb.launch(n, ts, 2000 + 100 * n, 50, kernel, name="hipModuleLaunchKernel")

    return launch


def kernel_owner(model, kernel):
    gpu = model.gpu
    uid = gpu.index[gpu["name"].astype(str) == kernel][0]
    return str(model.names[model.launcher[uid]])


def test_each_matmul_ogs_launch_gets_a_pseudo_op_with_the_recorded_shapes(tb):
    model = tb.model(moe_events(tb, launch=eager_launch(tb)))
    added = model.events.iloc[model.recorded_events :]
    assert added["name"].astype(str).tolist() == [MOE_OGS_UP, MOE_OGS_DOWN]
    assert (added["cat"] == "cpu_op").all()
    up, down = (added.iloc[i] for i in (0, 1))
    assert json.loads(up["input_dims"]) == [[32, 3072], [32, 1536, 5888], [32, 32], [], []]
    assert json.loads(up["input_type"]) == [BF16, U8, BF16, "Scalar", ""]
    assert json.loads(up["concrete_inputs"]) == ["", "", "", "4", UP_KERNEL]
    assert json.loads(down["input_dims"])[:2] == [[128, 2944], [32, 1472, 3072]]
    assert json.loads(down["concrete_inputs"])[4] == DOWN_KERNEL
    # frame -> pseudo op -> launch -> kernel; the pseudo op spans its launch
    parent, names = model.tree.parent, model.names
    for pseudo in added.index:
        (launch,) = np.flatnonzero(parent == pseudo)
        assert names[launch] == "hipModuleLaunchKernel"
        assert names[parent[pseudo]] == OGS
        assert model.events["ts"].iat[pseudo] == model.events["ts"].iat[launch]
    assert kernel_owner(model, UP_KERNEL) == MOE_OGS_UP
    assert kernel_owner(model, DOWN_KERNEL) == MOE_OGS_DOWN
    assert kernel_owner(model, FINALIZE) == "vllm::moe_forward"  # no shapes of its own
    assert kernel_owner(model, "_topk_forward") == "TopK"


def test_the_unified_table_scores_the_pseudo_ops(tb):
    model = tb.model(moe_events(tb, launch=eager_launch(tb)))
    inst = build_report(model, get_platform("MI300X")).unified.instances.set_index("name")
    # 2 * 128 * 3072 * 5888 FLOPs; 2 * 128 * 2944 * 3072 (see test_moe_ogs.py)
    assert inst.loc[MOE_OGS_UP, "GFLOPS"] == 4.630511616
    assert inst.loc[MOE_OGS_DOWN, "GFLOPS"] == 2.315255808
    assert inst.loc[MOE_OGS_UP, "Compute Spec"] == "matrix_bf16"
    assert inst.loc[MOE_OGS_UP, "op category"] == "MoE_unfused"
    assert inst.loc[MOE_OGS_UP, "Kernel Time (µs)"] == 50
    assert f"vllm::moe_forward->{FINALIZE} (Synthetic Op)" in inst.index


def test_the_stage_is_idempotent(tb):
    model = tb.model(moe_events(tb, launch=eager_launch(tb)))
    again = insert_pseudo_ops(model.events, model.links.launch, model.tree.parent)
    assert again.inserted == 0 and again.events is model.events


def test_without_the_router_op_nothing_is_inserted(tb):
    model = tb.model(moe_events(tb, launch=eager_launch(tb), topk=False))
    assert model.recorded_events == -1
    assert kernel_owner(model, UP_KERNEL) == "vllm::moe_forward"


def test_pseudo_ops_of_a_capture_trace_graft_under_the_graph_replay(tb):
    def captured(ts, kernel, n):  # during capture nothing runs: the launch names its kernel
        return [tb.runtime("hipModuleLaunchKernel", ts, 3, args={"kernel": kernel})]

    capture = [
        tb.runtime("hipStreamBeginCapture", 0, 1),
        *moe_events(tb, t0=10, launch=captured),
        tb.runtime("hipStreamEndCapture", 1100, 2),
    ]
    (tb.folder / "capture_traces").mkdir()
    tb.write(capture, name="capture_traces/bs32.json")
    (tb.folder / "capture_traces" / "execution_details.json").write_text(
        json.dumps([{"file": "bs32.json", "batch_size": 32, "mode": "FULL"}])
    )
    replay = [
        {"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 900}
        | {"name": "execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(x)"},
        tb.runtime("hipGraphLaunch", 10, 20, correlation=100),
    ]
    kernels = ["_topk_forward", UP_KERNEL, DOWN_KERNEL, FINALIZE]
    replay += [tb.kernel(k, 50 + 20 * j, 10, correlation=100) for j, k in enumerate(kernels)]
    model = open_trace(tb.write(replay, name="replay.json"))
    assert model.capture.merged_gpu_events == 4
    assert kernel_owner(model, UP_KERNEL) == MOE_OGS_UP
    assert kernel_owner(model, DOWN_KERNEL) == MOE_OGS_DOWN
    assert kernel_owner(model, FINALIZE) == "vllm::moe_forward"
    # grafted once, not inserted a second time over the grafted launch
    names = model.names[model.recorded_events :]
    assert sorted(n for n in names if n.startswith("pseudo_op::")) == [MOE_OGS_DOWN, MOE_OGS_UP]
