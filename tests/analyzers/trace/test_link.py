"""Linking host launches to GPU work (perf_report.md §2.5, §2.8)."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.trace.link import choose_key, link_launches


def linked(model) -> dict[int, int]:
    """{gpu uid: launch uid} for every linked event."""
    launch = model.links.launch
    return {int(u): int(launch[u]) for u in np.flatnonzero(launch != -1)}


def test_a_launch_is_linked_to_its_kernel_through_the_ac2g_flow_pair(tb):
    events = [
        tb.cpu_op("aten::mm", 0, 50),  # 0
        *tb.launch(10, ts=5, kernel_ts=100, kernel_dur=20),  # 1 runtime, 2 s, 3 f, 4 kernel
        tb.runtime("cuLaunchKernel", 20, 4, 11, cat="cuda_driver"),  # 5
        tb.flow("s", 11, 1, 1, 20),  # 6
        tb.flow("f", 11, 0, 8, 140),  # 7
        tb.kernel("triton_poi_fused_add_0", 140, 10, 11, tid=8),  # 8
        tb.runtime("cudaMemcpyAsync", 30, 4, 12),  # 9
        tb.flow("s", 12, 1, 1, 30),  # 10
        tb.flow("f", 12, 0, 7, 150),  # 11
        tb.kernel("Memcpy HtoD (Pinned -> Device)", 150, 5, 12, cat="gpu_memcpy"),  # 12
    ]
    model = tb.model(events)
    assert model.links.key == "correlation"
    assert model.links.by_flow is True
    assert linked(model) == {4: 1, 8: 5, 12: 9}
    assert model.tree.parent[[4, 8, 12]].tolist() == [1, 5, 9]
    assert model.launcher[[4, 8, 12]].tolist() == [0, 0, 0]
    assert model.links.colliding_ids == 0


def test_a_flow_that_ends_on_another_stream_than_the_kernel_links_nothing(tb):
    events = [
        tb.runtime("cudaLaunchKernel", 0, 4, 10),  # 0
        tb.flow("s", 10, 1, 1, 0),  # 1
        tb.flow("f", 10, 0, 8, 100),  # 2: stream 8 ...
        tb.kernel("gemm", 100, 20, 10, tid=7),  # 3: ... but the kernel runs on stream 7
        *tb.launch(11, ts=10, kernel_ts=130, kernel_dur=10),  # 4..7: a good launch
    ]
    model = tb.model(events)
    assert linked(model) == {7: 4}
    assert model.tree.parent[3] == -1
    timeline = model.gpu_timeline()
    assert (timeline.events_used, timeline.unlinked_excluded) == (1, 1)


def test_a_flow_that_ends_on_another_device_links_nothing(tb):
    events = [
        tb.runtime("cudaLaunchKernel", 0, 4, 10),
        tb.flow("s", 10, 1, 1, 0),
        tb.flow("f", 10, 1, 7, 100),  # device 1
        tb.kernel("gemm", 100, 20, 10, pid=0, tid=7),  # device 0
    ]
    assert linked(tb.model(events)) == {}


def test_a_launch_without_a_start_flow_is_not_linked_when_the_trace_has_flows(tb):
    events = [
        tb.runtime("hipMemsetAsync", 0, 4, 10),  # 0: no s flow for 10
        tb.flow("f", 10, 0, 7, 100),  # 1
        tb.kernel("Memset (Device)", 100, 2, 10, cat="gpu_memset"),  # 2
        *tb.launch(11, ts=10, kernel_ts=130, kernel_dur=10),  # 3..6
    ]
    assert linked(tb.model(events)) == {6: 3}


@pytest.mark.parametrize("graph_launch", ["cudaGraphLaunch", "hipGraphLaunch"])
def test_a_graph_launch_owns_every_gpu_event_with_its_correlation(tb, graph_launch):
    events = [
        tb.cpu_op("CUDAGraph::replay", 0, 30),  # 0
        tb.runtime(graph_launch, 2, 10, 50),  # 1
        tb.flow("s", 50, 1, 1, 2),  # 2
        tb.flow("f", 50, 0, 7, 100),  # 3: the flow only reaches the first kernel
        tb.kernel("gemm", 100, 10, 50, tid=7),  # 4
        tb.kernel("softmax", 110, 5, 50, tid=7),  # 5
        tb.kernel("Memcpy DtoD (Device -> Device)", 112, 4, 50, tid=8, cat="gpu_memcpy"),  # 6
        tb.kernel("gemm", 120, 10, 51, tid=7),  # 7: correlation never launched
    ]
    model = tb.model(events)
    assert linked(model) == {4: 1, 5: 1, 6: 1}
    assert model.launcher[[4, 5, 6, 7]].tolist() == [0, 0, 0, -1]
    assert model.gpu_timeline().unlinked_excluded == 1


def test_a_graph_launch_links_its_kernels_in_a_trace_without_flows(tb):
    events = [
        tb.runtime("hipGraphLaunch", 0, 10, 50),
        tb.kernel("gemm", 100, 10, 50, tid=7),
        tb.kernel("gemm", 120, 10, 50, tid=9),
    ]
    assert linked(tb.model(events)) == {1: 0, 2: 0}


def test_a_similar_name_is_not_a_graph_launch(tb):
    events = [
        tb.runtime("cudaGraphLaunchX", 0, 10, 50),  # not exactly cudaGraphLaunch
        tb.flow("s", 50, 1, 1, 0),
        tb.flow("f", 50, 0, 7, 100),
        tb.kernel("gemm", 100, 10, 50, tid=7),  # 3: reached by the flow
        tb.kernel("gemm", 120, 10, 50, tid=9),  # 4: same id, another stream
    ]
    assert linked(tb.model(events)) == {3: 0}


def test_old_traces_whose_first_launch_lacks_correlation_link_by_external_id(tb):
    events = [
        tb.runtime("cudaGetDevice", 0, 1, 3),  # 0: not a launch, so it does not decide the key
        tb.runtime("cudaLaunchKernel", 5, 4, args={"External id": 20}),  # 1
        tb.flow("s", 20, 1, 1, 5),  # 2
        tb.flow("f", 20, 0, 7, 100),  # 3
        tb.kernel("gemm", 100, 10, 900, args={"External id": 20}),  # 4
        tb.runtime("cudaLaunchKernel", 15, 4, args={"External id": 21}),  # 5
        tb.flow("s", 21, 1, 1, 15),  # 6
        tb.flow("f", 21, 0, 8, 120),  # 7
        tb.kernel("relu", 120, 10, 3, tid=8, args={"External id": 21}),  # 8: correlation 3!
    ]
    model = tb.model(events)
    assert model.links.key == "external_id"
    assert linked(model) == {4: 1, 8: 5}


def test_old_category_spellings_link_like_modern_ones(tb):
    events = [
        tb.cpu_op("aten::mm", 0, 20),
        tb.runtime("cudaLaunchKernel", 5, 4, cat="Runtime", args={"External id": 20}),
        tb.flow("s", 20, 1, 1, 5),
        tb.flow("f", 20, 0, 7, 100),
        tb.kernel("gemm", 100, 10, cat="Kernel", args={"External id": 20}),
    ]
    events[0]["cat"] = "Operator"
    model = tb.model(events)
    assert model.links.key == "external_id"
    assert linked(model) == {4: 1}
    assert model.launcher[4] == 0


def test_the_link_key_is_correlation_when_the_first_launch_has_one(tb):
    events = [
        tb.runtime("cudaLaunchKernel", 0, 4, 10, args={"External id": 1}),
        tb.runtime("cudaLaunchKernel", 5, 4, args={"External id": 2}),
    ]
    assert choose_key(tb.load(events).events) == "correlation"
    assert choose_key(tb.load(events[1:]).events) == "external_id"
    assert choose_key(tb.load([tb.cpu_op("aten::mm", 0, 1)]).events) == "correlation"


def test_without_any_flow_events_launches_link_by_correlation(tb):
    events = [
        tb.cpu_op("aten::mm", 0, 50),  # 0
        tb.runtime("cudaLaunchKernel", 5, 4, 10),  # 1
        tb.runtime("cudaLaunchKernel", 15, 4, 11),  # 2
        tb.kernel("gemm", 100, 20, 10, tid=7),  # 3
        tb.kernel("relu", 130, 10, 11, tid=9),  # 4
        tb.kernel("add", 150, 10, 12, tid=9),  # 5: never launched
    ]
    model = tb.model(events)
    assert model.links.by_flow is False
    assert linked(model) == {3: 1, 4: 2}
    assert model.launcher[[3, 4, 5]].tolist() == [0, 0, -1]


def test_unlinked_kernels_stay_unlinked_and_are_counted_out_of_the_timeline(tb):
    events = [
        *tb.launch(10, ts=0, kernel_ts=100, kernel_dur=20),  # 0..3
        tb.kernel("orphan", 200, 50, 99),  # 4: correlation 99 was never launched
        tb.kernel("no_id", 300, 10),  # 5: no correlation at all
    ]
    model = tb.model(events)
    assert linked(model) == {3: 0}
    assert model.gpu["linked"].tolist() == [True, False, False]
    timeline = model.gpu_timeline()
    assert (timeline.events_used, timeline.unlinked_excluded) == (1, 2)
    assert timeline.pooled.total_time == 20
    everything = model.gpu_timeline(include_unlinked=True)
    assert (everything.events_used, everything.unlinked_excluded) == (3, 0)
    assert everything.pooled.total_time == 210
    assert everything.pooled.busy_time == 80


def test_colliding_ids_counts_correlations_launched_in_two_host_processes(tb):
    events = [
        tb.runtime("cudaLaunchKernel", 0, 4, 5, pid=1),
        tb.runtime("cudaLaunchKernel", 0, 4, 5, pid=2),  # 5: in two processes
        tb.runtime("cudaLaunchKernel", 10, 4, 6, pid=1, tid=1),
        tb.runtime("cudaLaunchKernel", 10, 4, 6, pid=1, tid=2),  # 6: two threads, one process
        tb.runtime("cudaLaunchKernel", 20, 4, 7, pid=2),  # 7: once
        tb.runtime("cudaLaunchKernel", 30, 4, 8, pid=1),
        tb.runtime("cudaLaunchKernel", 30, 4, 8, pid=2),
        tb.runtime("cudaLaunchKernel", 30, 4, 8, pid=3),  # 8: in three processes
    ]
    assert link_launches(tb.load(events).events).colliding_ids == 2


def test_launch_array_covers_every_uid_and_marks_only_gpu_events(tb):
    events = [tb.cpu_op("aten::mm", 0, 50), *tb.launch(10, ts=5, kernel_ts=100, kernel_dur=20)]
    links = link_launches(tb.load(events).events)
    assert links.launch.tolist() == [-1, -1, -1, -1, 1]
    assert links.launch.dtype == np.int64
