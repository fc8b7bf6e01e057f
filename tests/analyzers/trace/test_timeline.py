"""GPU timeline: classification of GPU events (§3.2) and the eight rows of §3.3."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooflens.analyzers.trace.timeline import (
    ROWS,
    classify,
    classify_events,
    gpu_timeline,
    timeline,
)

# --- classify ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["Memcpy DtoH (Device -> Pinned)", "Memcpy HtoD (Pageable -> Device)", "ncclMemcpy"],
)
def test_every_gpu_memcpy_event_is_memcpy_whatever_its_name(name):
    assert classify("gpu_memcpy", name) == "memcpy"


@pytest.mark.parametrize(
    "name",
    [
        "MEMORY_COPY_HOST_TO_DEVICE",
        "MEMORY_COPY_DEVICE_TO_HOST",
        "MEMORY_COPY_DEVICE_TO_DEVICE",
        "MEMORY_COPY_DEVICE_TO_DEVICE.kd",
        "__amd_rocclr_copyBuffer",
        "__amd_rocclr_copyBuffer.kd",
        "__amd_rocclr_copyBufferAligned",
        "__amd_rocclr_copyBufferRect",
        "__amd_rocclr_copyBufferRectAligned",
        "__amd_rocclr_copyBufferRectAligned.kd",
    ],
)
def test_rocm_legacy_copy_kernels_are_memcpy(name):
    assert classify("kernel", name) == "memcpy"


@pytest.mark.parametrize(
    "name",
    [
        "__amd_rocclr_copyBufferToImage",  # the name must match in full
        "my_MEMORY_COPY_HOST_TO_DEVICE",
        "MEMORY_COPY_HOST_TO_DEVICE_v2",
        "memory_copy_host_to_device",  # the copy names are case-sensitive
        "__amd_rocclr_copyBufferAlignedRect",  # Rect comes before Aligned
    ],
)
def test_kernels_that_only_resemble_copy_names_are_computation(name):
    assert classify("kernel", name) == "computation"


def test_a_memset_named_like_a_copy_kernel_is_not_memcpy():
    assert classify("gpu_memset", "MEMORY_COPY_HOST_TO_DEVICE") == "computation"


@pytest.mark.parametrize(
    "name",
    ["__amd_rocclr_fillBuffer", "__amd_rocclr_fillBufferAligned.kd", "__amd_rocclr_fillBuffer.kd"],
)
def test_rocm_fill_buffer_kernels_stay_computation(name):
    assert classify("kernel", name) == "computation"


@pytest.mark.parametrize(
    "name",
    [
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
        "NCCL_AllGather_kernel",
        "void rcclGenericKernel<1, false>(ncclDevComm*)",
        "RCCL_reduce_scatter",
        "void vllm::cross_device_reduce_1stage<__hip_bfloat16, 8>(...)",
        "Cross_Device_Reduce_2Stage",
        "multimem_all_reduce_kernel",
    ],
)
def test_collective_kernels_are_communication_case_insensitively(name):
    assert classify("kernel", name) == "communication"


def test_a_memset_with_a_collective_name_is_communication():
    assert classify("gpu_memset", "ncclMemset") == "communication"


@pytest.mark.parametrize(
    ("cat", "name"),
    [
        ("gpu_memset", "Memset (Device)"),
        ("kernel", "void at::native::vectorized_elementwise_kernel<4, ...>"),
        ("kernel", "Cijk_Alik_Bljk_HHS_BH_MT128x128x32"),
        ("kernel", "custom_all_reduce_kernel"),  # no nccl/rccl/cross_device_reduce in it
    ],
)
def test_other_kernels_and_memsets_are_computation(cat, name):
    assert classify(cat, name) == "computation"


def test_classify_events_buckets_every_row():
    gpu = pd.DataFrame(
        {
            "cat": ["kernel", "gpu_memcpy", "kernel", "gpu_memset", "kernel"],
            "name": ["gemm", "Memcpy HtoD", "ncclKernel", "Memset (Device)", "gemm"],
        }
    )
    assert classify_events(gpu).tolist() == [
        "computation",
        "memcpy",
        "communication",
        "computation",
        "computation",
    ]
    assert len(classify_events(gpu.iloc[:0])) == 0


# --- timeline ------------------------------------------------------------------------------

# computation [0,10] [20,30] [52,60]; communication [5,25]; memcpy [8,12] [24,41]; given unsorted.
HAND = [
    (24, 41, "memcpy"),
    (20, 30, "computation"),
    (5, 25, "communication"),
    (52, 60, "computation"),
    (8, 12, "memcpy"),
    (0, 10, "computation"),
]


def hand_timeline():
    start = np.array([s for s, _, _ in HAND], float)
    end = np.array([e for _, e, _ in HAND], float)
    bucket = np.array([b for _, _, b in HAND], dtype=object)
    return timeline(start, end, bucket)


def test_timeline_rows_of_a_hand_built_overlap():
    t = hand_timeline()
    # COMP = [0,10] [20,30] [52,60]                                   -> 10 + 10 + 8
    assert t.computation_time == 28
    # COMM - COMP = [10,20]
    assert t.exposed_comm_time == 10
    # MEM - COMP = [10,12] [30,41]; minus COMM [5,25] leaves [30,41]
    assert t.exposed_memcpy_time == 11
    # ALL = [0,41] [52,60]
    assert t.busy_time == 49
    assert t.total_time == 60
    assert t.idle_time == 11
    assert t.total_comm_time == 20
    # MEM = [8,12] [24,41]
    assert t.total_memcpy_time == 21


def test_timeline_parts_add_up_to_the_total():
    t = hand_timeline()
    parts = t.computation_time + t.exposed_comm_time + t.exposed_memcpy_time + t.idle_time
    assert parts == t.total_time


def test_timeline_rows_come_in_report_order_in_ms_and_percent_of_total():
    rows = hand_timeline().rows()
    assert [r["type"] for r in rows] == [
        "computation_time",
        "exposed_comm_time",
        "exposed_memcpy_time",
        "busy_time",
        "idle_time",
        "total_time",
        "total_comm_time",
        "total_memcpy_time",
    ]
    assert list(ROWS) == [r["type"] for r in rows]
    by_type = {r["type"]: r for r in rows}
    assert by_type["computation_time"]["time ms"] == pytest.approx(0.028)
    assert by_type["computation_time"]["percent"] == pytest.approx(28 / 60 * 100)
    assert by_type["idle_time"]["percent"] == pytest.approx(11 / 60 * 100)
    assert by_type["total_time"]["percent"] == pytest.approx(100)
    assert by_type["total_comm_time"]["time ms"] == pytest.approx(0.020)


def test_communication_hidden_under_computation_is_not_exposed():
    t = timeline(
        np.array([0.0, 2.0]), np.array([10.0, 8.0]), np.array(["computation", "communication"])
    )
    assert (t.exposed_comm_time, t.total_comm_time, t.busy_time) == (0, 6, 10)


def test_zero_duration_events_add_no_time():
    t = timeline(np.array([0.0, 20.0]), np.array([10.0, 20.0]), np.array(["computation", "memcpy"]))
    assert t.total_memcpy_time == 0
    assert t.busy_time == 10
    assert t.total_time == 20  # the zero-length copy still marks the last GPU instant
    assert t.idle_time == 10


def test_timeline_of_no_events_is_all_zero_with_zero_percent():
    t = timeline(np.empty(0), np.empty(0), np.empty(0, dtype=object))
    assert [r["time ms"] for r in t.rows()] == [0.0] * 8
    assert [r["percent"] for r in t.rows()] == [0.0] * 8


BUCKETS = st.sampled_from(["computation", "communication", "memcpy"])
EVENT = st.tuples(st.integers(0, 50), st.integers(0, 50), BUCKETS).map(
    lambda e: (min(e[0], e[1]), max(e[0], e[1]), e[2])
)


@given(st.lists(EVENT, max_size=15))
def test_computation_exposed_comm_exposed_memcpy_and_idle_add_up_to_total(events):
    start = np.array([e[0] for e in events], float)
    end = np.array([e[1] for e in events], float)
    bucket = np.array([e[2] for e in events], dtype=object)
    t = timeline(start, end, bucket)
    parts = t.computation_time + t.exposed_comm_time + t.exposed_memcpy_time + t.idle_time
    assert parts == t.total_time
    assert t.computation_time + t.exposed_comm_time + t.exposed_memcpy_time == t.busy_time
    # brute force on the integer grid
    covered = {k for s, e, _ in events for k in range(s, e)}
    assert t.busy_time == len(covered)
    total = max(e for _, e, _ in events) - min(s for s, _, _ in events) if events else 0
    assert t.total_time == total


# --- gpu_timeline over a GPU-event frame ----------------------------------------------------


def gpu_frame(rows):
    return pd.DataFrame(rows, columns=["cat", "name", "ts", "dur", "device", "linked"])


def test_gpu_timeline_pools_devices_splits_per_device_and_drops_unlinked_events():
    gpu = gpu_frame(
        [
            ("kernel", "gemm", 0.0, 10.0, 0, True),
            ("kernel", "ncclKernel_AllReduce", 5.0, 15.0, 1, True),
            ("kernel", "gemm", 100.0, 100.0, 0, False),
        ]
    )
    result = gpu_timeline(gpu)
    assert (result.events_used, result.unlinked_excluded) == (2, 1)
    pooled = result.pooled
    assert (pooled.total_time, pooled.computation_time, pooled.exposed_comm_time) == (20, 10, 10)
    assert sorted(result.per_device) == [0, 1]
    assert (result.per_device[0].total_time, result.per_device[0].computation_time) == (10, 10)
    assert (result.per_device[1].total_time, result.per_device[1].exposed_comm_time) == (15, 15)


def test_gpu_timeline_can_include_unlinked_events():
    gpu = gpu_frame(
        [("kernel", "gemm", 0.0, 10.0, 0, True), ("kernel", "gemm", 100.0, 100.0, 0, False)]
    )
    result = gpu_timeline(gpu, include_unlinked=True)
    assert (result.events_used, result.unlinked_excluded) == (2, 0)
    assert (result.pooled.total_time, result.pooled.busy_time, result.pooled.idle_time) == (
        200,
        110,
        90,
    )


def test_gpu_timeline_of_an_event_without_duration_counts_it_as_an_instant():
    gpu = gpu_frame(
        [("kernel", "gemm", 0.0, 10.0, 0, True), ("kernel", "k", 30.0, np.nan, 0, True)]
    )
    assert gpu_timeline(gpu).pooled.total_time == 30
    assert gpu_timeline(gpu).pooled.busy_time == 10
