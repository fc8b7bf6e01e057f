"""A trace that captures a graph and replays it serves as its own capture trace (§9).

The shape of torch.compile's CUDA-graph trees: inside StreamBeginCapture..StreamEndCapture an
`aten::mm` launches a GEMM that runs nothing (captured: an `s` flow, no kernel); afterwards
a graph launch replays that GEMM with no operator above it.
"""

from __future__ import annotations

import numpy as np

from rooflens.analyzers.perf import registry
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.unified import attribute_unified
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.own_capture import own_captures

GEMM = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256"
MM_ARGS = {
    "Input Dims": [[16, 64], [64, 32]],
    "Input type": ["c10::BFloat16", "c10::BFloat16"],
    "Input Strides": [[64, 1], [32, 1]],
}


def _events(tb, replayed: str = GEMM) -> list:
    launch_args = {"kernel": GEMM}
    return [
        tb.runtime("hipStreamBeginCapture", 10, 2, 1),
        tb.cpu_op("aten::mm", 20, 30, args=MM_ARGS),
        tb.runtime("hipExtModuleLaunchKernel", 25, 10, 2, args=launch_args),
        tb.flow("s", 2, 1, 1, 25),  # captured: the flow has no finish and no kernel
        tb.runtime("hipStreamEndCapture", 60, 2, 3),
        tb.cpu_op("Torch-Compiled Region: 0/0", 100, 50),
        tb.runtime("hipGraphLaunch", 110, 20, 4),
        tb.kernel(replayed, 200, 8.0, 4),
    ]


def test_trace_without_a_graph_launch_or_a_capture_window_is_not_its_own_capture(tb):
    no_replay = tb.load(_events(tb)[:5])
    assert own_captures(no_replay, build_model(no_replay).tree.parent) == ()
    no_window = tb.load(_events(tb)[5:])
    assert own_captures(no_window, build_model(no_window).tree.parent) == ()


def test_replayed_kernel_gets_the_operator_that_captured_it(tb):
    trace = tb.load(_events(tb))
    plain = build_model(trace)
    (capture,) = own_captures(trace, plain.tree.parent)
    assert (capture.file, capture.batch_size, capture.mode) == ("trace.json", None, "FULL")
    assert capture.windows[0].keys == (GEMM,)

    # without the merge the compiled region, a leaf over the graph launch, owns the GEMM
    ops = attribute_unified(plain, registry.has_model).ops
    assert ops["name"].tolist() == ["Torch-Compiled Region: 0/0"]

    merged = build_model(trace, captures=(capture,))
    assert merged.capture is not None
    assert (merged.capture.merged_launches, merged.capture.merged_gpu_events) == (1, 1)
    report = build_report(merged, get_platform("MI300X"))
    (inst,) = (row for _, row in report.unified.instances.iterrows())
    assert inst["name"] == "aten::mm"
    assert inst["Kernel Time (µs)"] == 8.0  # the replayed kernel's duration
    assert inst["GFLOPS"] == 2 * 16 * 64 * 32 / 1e9
    # bf16 A (16x64) + B (64x32) read, C (16x32) written
    assert np.isclose(inst["Data Moved (MB)"], (16 * 64 + 64 * 32 + 16 * 32) * 2 / 2**20)
    assert np.isfinite(inst["Pct Roofline"])


def test_replay_of_another_graph_is_left_with_the_graph_launch(tb):
    trace = tb.load(_events(tb, replayed="some_other_kernel"))
    (capture,) = own_captures(trace, build_model(trace).tree.parent)
    merged = build_model(trace, captures=(capture,))
    assert merged.capture.merged_gpu_events == 0
    ops = attribute_unified(merged, registry.has_model).ops
    assert ops["name"].tolist() == ["Torch-Compiled Region: 0/0"]
