"""multi_kernel_data on hand-written traces: copy directions, collectives, overlap, empty cases."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.analyzers.prepare.multi_kernel import (
    MultiKernelData,
    memcpy_direction,
    multi_kernel_data,
)
from tests.helpers.trace_builder import TraceBuilder

tb = TraceBuilder


def memcpy(name: str, ts: float, dur: float, nbytes: int | None = None, stream: int = 9):
    args = {} if nbytes is None else {"bytes": nbytes}
    return tb.kernel(name, ts, dur, cat="gpu_memcpy", tid=stream, args=args)


def nccl(ts: float, dur: float, stream: int = 8, name: str = "ncclDevKernel_AllReduce_Sum_f32"):
    return tb.kernel(name, ts, dur, tid=stream)


def dump(tmp_path, events) -> dict:
    return multi_kernel_data(TraceBuilder(tmp_path).model(events)).model_dump(mode="json")


@pytest.mark.parametrize(
    ("name", "direction"),
    [
        ("Memcpy DtoH (Device -> Pinned)", "D2H"),
        ("copy device -> host", "D2H"),
        ("cudaMemcpyDeviceToHost", "D2H"),
        ("Memcpy HtoD (Pinned -> Device)", "H2D"),
        ("Memcpy HtoD (Pageable -> Device)", "H2D"),
        ("copy Host -> Device", "H2D"),
        ("hipMemcpyHostToDevice", "H2D"),
        ("Memcpy DtoD (Device -> Device)", "D2D"),
        ("copy DEVICE -> DEVICE", "D2D"),
        ("MemcpyDeviceToDevice", "D2D"),
        ("Memcpy PtoP (Device -> Pinned)", "other"),
        ("__amd_rocclr_copyBuffer", "other"),
        ("", "other"),
        ("DtoH then HtoD", "D2H"),  # D2H is tried first
        ("htod and dtod", "H2D"),  # then H2D, then D2D
    ],
)
def test_memcpy_direction_every_spelling(name, direction):
    assert memcpy_direction(pd.Series([name])).tolist() == [direction]


def test_memcpy_direction_vectorised_on_categoricals():
    names = pd.Series(["Memcpy DtoH", "Memcpy HtoD", "x", "Memcpy DtoH"], dtype="category")
    assert memcpy_direction(names).tolist() == ["D2H", "H2D", "other", "D2H"]
    assert memcpy_direction(pd.Series([], dtype=object)).tolist() == []


def test_memcpy_summary_counts_sums_bytes_linked_or_not(tmp_path):
    events = [
        *tb.launch(1, ts=0, kernel_ts=5, kernel_dur=3, kernel_name="gemm_kernel"),
        memcpy("Memcpy DtoH (Device -> Pinned)", 10, 10, nbytes=100),
        memcpy("Memcpy DtoH (Device -> Pageable)", 30, 30, nbytes=300),
        memcpy("Memcpy HtoD (Pinned -> Device)", 70, 5),  # no size
        memcpy("Memcpy DtoD (Device -> Device)", 80, 2.5, nbytes=0),  # zero: not counted
        memcpy("Memcpy DtoD (Device -> Device)", 90, 1.5, nbytes=7),
    ]
    memcpy_summary = dump(tmp_path, events)["memcpy_summary"]
    assert memcpy_summary == {
        "total_count": 5,
        "total_time_us": 49.0,
        "by_direction": {
            "D2H": {
                "count": 2,
                "total_time_us": 40.0,
                "avg_time_us": 20.0,
                "max_time_us": 30.0,
                "total_bytes": 400,
                "avg_bytes": 200.0,
            },
            "H2D": {
                "count": 1,
                "total_time_us": 5.0,
                "avg_time_us": 5.0,
                "max_time_us": 5.0,
                "total_bytes": 0,
                "avg_bytes": 0.0,
            },
            "D2D": {
                "count": 2,
                "total_time_us": 4.0,
                "avg_time_us": 2.0,
                "max_time_us": 2.5,
                "total_bytes": 7,
                "avg_bytes": 3.5,
            },
        },
    }
    # Fixed order D2H, H2D, D2D, other, whatever the trace order.
    assert list(memcpy_summary["by_direction"]) == ["D2H", "H2D", "D2D"]


def test_memcpy_summary_rounds_and_orders_directions(tmp_path):
    events = [
        memcpy("Memcpy PtoP", 0, 1.0, nbytes=10),
        memcpy("Memcpy DtoD", 10, 1.0, nbytes=1),
        memcpy("Memcpy DtoD", 20, 1.0, nbytes=1),
        memcpy("Memcpy DtoD", 30, 1.001, nbytes=1),
    ]
    by_direction = dump(tmp_path, events)["memcpy_summary"]["by_direction"]
    assert list(by_direction) == ["D2D", "other"]
    assert by_direction["D2D"]["avg_time_us"] == 1.0  # 3.001 / 3 rounded to 2 decimals
    assert by_direction["D2D"]["avg_bytes"] == 1.0
    assert by_direction["other"]["total_bytes"] == 10


def test_nccl_summary_top_ten_longest_ties_in_trace_order(tmp_path):
    durations = [5, 12, 3, 12, 7, 1, 9, 2, 8, 4, 6, 11]
    events = [nccl(100 * i, d, stream=20 + i) for i, d in enumerate(durations)]
    events.append(tb.kernel("rcclGenericKernel", 5000, 0.5, tid=3))  # rccl counts as well
    events.append(tb.kernel("gemm_kernel", 6000, 50))  # computation: not a collective
    summary = dump(tmp_path, events)["nccl_summary"]
    assert summary["total_count"] == 13
    assert summary["total_time_us"] == 80.5
    assert summary["avg_time_us"] == round(80.5 / 13, 2)
    assert summary["max_time_us"] == 12.0
    top = summary["top_ops"]
    assert len(top) == 10
    assert [op["duration_us"] for op in top] == [12, 12, 11, 9, 8, 7, 6, 5, 4, 3]
    assert [op["stream"] for op in top[:3]] == [21, 23, 31]  # equal 12s keep trace order
    assert {op["name"] for op in top} == {"ncclDevKernel_AllReduce_Sum_f32"}
    assert list(top[0]) == ["name", "duration_us", "stream"]


def test_nccl_summary_fewer_than_ten(tmp_path):
    summary = dump(tmp_path, [nccl(0, 4, stream=4), nccl(10, 2, stream=4)])["nccl_summary"]
    assert summary == {
        "total_count": 2,
        "total_time_us": 6.0,
        "avg_time_us": 3.0,
        "max_time_us": 4.0,
        "top_ops": [
            {"name": "ncclDevKernel_AllReduce_Sum_f32", "duration_us": 4.0, "stream": 4},
            {"name": "ncclDevKernel_AllReduce_Sum_f32", "duration_us": 2.0, "stream": 4},
        ],
    }


def test_overlap_analysis_hand_computed(tmp_path):
    events = [
        tb.kernel("gemm_kernel", 0, 100, tid=7),  # computation [0, 100]
        nccl(50, 100, stream=8),  # comm [50, 150]: 50 hidden, 50 exposed
        memcpy("Memcpy DtoD", 90, 110),  # copy [90, 200]: exposed only in [150, 200]
        tb.kernel("Memset (Device)", 200, 10, cat="gpu_memset", tid=7),  # computation
    ]
    overlap = dump(tmp_path, events)["overlap_analysis"]
    assert overlap == {
        "total_time_us": 210.0,
        "computation_time_us": 110.0,
        "total_comm_time_us": 100.0,
        "exposed_comm_time_us": 50.0,
        "total_memcpy_time_us": 110.0,
        "exposed_memcpy_time_us": 50.0,
        "comm_overlap_ratio": 0.5,
        "memcpy_overlap_ratio": round(1 - 50 / 110, 4),  # 0.5455
        "comm_percent_of_total": round(50 / 210 * 100, 2),  # 23.81
        "memcpy_percent_of_total": round(50 / 210 * 100, 2),
    }
    assert overlap["memcpy_overlap_ratio"] == 0.5455


def test_overlap_uses_unlinked_events_too(tmp_path):
    events = [
        *tb.launch(1, ts=0, kernel_ts=10, kernel_dur=10),  # linked [10, 20]
        tb.kernel("unlinked_kernel", 100, 20),  # no launch: still counted, span to 120
    ]
    overlap = dump(tmp_path, events)["overlap_analysis"]
    assert overlap["total_time_us"] == 110.0
    assert overlap["computation_time_us"] == 30.0


def test_computation_only_keeps_null_ratios_and_omits_nccl_stats(tmp_path):
    data = dump(tmp_path, [tb.kernel("gemm_kernel", 0, 10), tb.kernel("relu", 20, 5)])
    assert data == {
        "memcpy_summary": {"total_count": 0, "total_time_us": 0.0, "by_direction": {}},
        "nccl_summary": {"total_count": 0, "total_time_us": 0.0},
        "overlap_analysis": {
            "total_time_us": 25.0,
            "computation_time_us": 15.0,
            "total_comm_time_us": 0.0,
            "exposed_comm_time_us": 0.0,
            "total_memcpy_time_us": 0.0,
            "exposed_memcpy_time_us": 0.0,
            "comm_overlap_ratio": None,
            "memcpy_overlap_ratio": None,
            "comm_percent_of_total": 0.0,
            "memcpy_percent_of_total": 0.0,
        },
    }


def test_no_gpu_events_gives_empty_overlap(tmp_path):
    result = multi_kernel_data(TraceBuilder(tmp_path).model([tb.cpu_op("aten::add", 0, 10)]))
    data = result.model_dump(mode="json")
    assert result.overlap_analysis is None
    assert MultiKernelData.model_validate_json(result.model_dump_json()) == result
    assert data == {
        "memcpy_summary": {"total_count": 0, "total_time_us": 0.0, "by_direction": {}},
        "nccl_summary": {"total_count": 0, "total_time_us": 0.0},
        "overlap_analysis": {},
    }


def test_zero_length_window_has_zero_percents(tmp_path):
    overlap = dump(tmp_path, [nccl(5, 0)])["overlap_analysis"]
    assert overlap["total_time_us"] == 0.0
    assert overlap["comm_overlap_ratio"] is None  # nothing to overlap
    assert overlap["comm_percent_of_total"] == 0.0


def test_error_key_only_when_set(tmp_path):
    data = multi_kernel_data(TraceBuilder(tmp_path).model([tb.kernel("k", 0, 1)]))
    assert "error" not in data.model_dump(mode="json")
    failed = data.model_copy(update={"error": "boom"}).model_dump(mode="json")
    assert failed["error"] == "boom"
    assert MultiKernelData.model_validate(data.model_dump()).model_dump() == data.model_dump()
