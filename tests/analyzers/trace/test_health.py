"""Trace health: each limitation is detected and explained (issue: engine foundation, item 5)."""

from __future__ import annotations

import pytest

from rooflens.analyzers.trace.device import identify_gpu
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.schema import DeviceProperties

MM = {"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}


def codes(health) -> dict[str, str]:
    return {w.code: w.severity for w in health.warnings}


def test_a_file_that_merges_ranks_is_an_error_that_says_to_split_it(tb):
    events = [
        tb.cpu_op("aten::mm", 0, 20, pid=10, tid=10, args=MM),
        *tb.launch(7, ts=5, kernel_ts=30, kernel_dur=5, pid=10, tid=10),
        tb.cpu_op("aten::mm", 0, 20, pid=11, tid=11, args=MM),
        tb.runtime("cudaLaunchKernel", 6, 4, 7, pid=11, tid=11),
    ]
    health = assess(tb.model(events))
    assert health.merged_ranks
    assert health.host_processes_launching == 2
    assert codes(health)["merged_ranks"] == "error"
    message = next(w.message for w in health.warnings if w.code == "merged_ranks")
    assert "one trace file per rank" in message


def test_ops_without_shapes_warn_that_the_roofline_is_lost(tb):
    events = [tb.cpu_op("aten::mm", 0, 20), *tb.launch(1, ts=5, kernel_ts=30, kernel_dur=5)]
    health = assess(tb.model(events))
    assert not health.shapes_recorded
    assert "record_shapes=True" in next(w.message for w in health.warnings if w.code == "no_shapes")


def test_gpu_work_on_two_devices_is_reported_per_device(tb):
    events = [
        tb.cpu_op("aten::mm", 0, 50, args=MM),
        *tb.launch(1, ts=5, kernel_ts=100, kernel_dur=10),
        tb.runtime("cudaLaunchKernel", 20, 4, 2),
        tb.flow("s", 2, 1, 1, 20),
        tb.flow("f", 2, 1, 9, 100),
        tb.kernel("gemm_kernel", 100, 30, 2, pid=1, tid=9),
    ]
    model = tb.model(events)
    health = assess(model)
    assert health.devices_with_gpu_events == [0, 1]
    assert "several_devices" in codes(health)
    per_device = model.gpu_timeline().per_device
    assert per_device[0].busy_time == 10
    assert per_device[1].busy_time == 30
    assert model.gpu_timeline().pooled.busy_time == 30  # pooled: the two overlap


def test_graph_replay_is_recognised(tb):
    events = [
        tb.runtime("cudaGraphLaunch", 0, 5, 3),
        tb.kernel("k1", 10, 2, 3),
        tb.kernel("k2", 13, 2, 3),
    ]
    health = assess(tb.model(events))
    assert (health.execution, health.graph_launches) == ("graph replay", 1)
    assert codes(health)["graph_replay"] == "info"


def test_a_trace_without_gpu_events_says_how_to_profile_them(tb):
    health = assess(tb.model([tb.cpu_op("aten::mm", 0, 20, args=MM)]))
    assert health.execution == "no GPU work"
    warning = next(w for w in health.warnings if w.code == "no_gpu_events")
    assert warning.severity == "error"
    assert "ProfilerActivity.CUDA" in warning.message


def test_profiler_steps_are_listed_in_order(tb):
    events = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": f"ProfilerStep#{n}",
            "pid": 1,
            "tid": 1,
            "ts": n * 100,
            "dur": 90,
        }
        for n in (4, 3)
    ]
    events.append(tb.cpu_op("aten::mm", 310, 20, args=MM))
    assert assess(tb.model(events)).profiler_steps == [3, 4]


@pytest.mark.parametrize(
    ("device", "versions", "platform"),
    [
        (DeviceProperties(id=0, name="AMD Instinct MI300X VF"), {}, "MI300X"),
        (DeviceProperties(id=0, name="NVIDIA H100 PCIe"), {}, "H100_PCIe"),
        (DeviceProperties(id=0, name="NVIDIA H100 80GB HBM3"), {}, "H100_SXM"),
        # GB200 differs from B200 (clocks, power): no guess rather than a wrong roof
        (DeviceProperties(id=0, name="NVIDIA GB200"), {}, None),
        (
            DeviceProperties(
                id=0,
                name="",
                computeMajor=9,
                computeMinor=4,
                numSms=304,
                totalGlobalMem=256 * 2**30,
            ),
            {"hip_runtime_version": "1"},
            "MI325X",
        ),
        (
            DeviceProperties(
                id=0,
                name="",
                computeMajor=9,
                computeMinor=4,
                numSms=304,
                totalGlobalMem=192 * 2**30,
            ),
            {"hip_runtime_version": "1"},
            "MI300X",
        ),
        (DeviceProperties(id=0, name="Mystery GPU"), {}, None),
    ],
)
def test_the_gpu_name_or_its_properties_suggest_a_platform(device, versions, platform):
    assert identify_gpu([device], versions, [0]).suggested_platform == platform
