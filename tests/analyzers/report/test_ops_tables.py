"""The launcher tables (perf_report.md §7.2-7.4) on a hand-written trace.

Launchers (rule A): aten::linear launches one elementwise kernel (10 µs) and holds an aten::mm
launching gemm_a [205, 220] and gemm_b [215, 230] (25 µs busy); a second aten::mm launches
gemm_a (20 µs) then gemm_b (10 µs): 30 µs. So GEMM has 55 µs direct, elementwise 10 µs.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rooflens.analyzers.perf.categories import default_table
from rooflens.analyzers.report.launchers import attribute_launchers
from rooflens.analyzers.report.ops_tables import (
    ops_summary,
    ops_summary_by_category,
    ops_unique_args,
    with_shares,
)

ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"
REDUCE = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>"


@pytest.fixture
def launchers(tb):
    events = [
        tb.thread_name("python main"),
        tb.cpu_op("aten::linear", 0, 100),
        *tb.launch(1, 5, 200, 10, kernel_name=ELEMENTWISE),
        tb.cpu_op("aten::mm", 20, 40),
        *tb.launch(2, 25, 205, 15, kernel_name="gemm_a", stream=8),
        *tb.launch(3, 35, 215, 15, kernel_name="gemm_b", stream=9),
        tb.cpu_op("aten::mm", 120, 40),
        *tb.launch(4, 125, 300, 20, kernel_name="gemm_a", stream=8),
        *tb.launch(5, 135, 320, 10, kernel_name="gemm_b", stream=9),
    ]
    return attribute_launchers(tb.model(events), default_table())


def test_ops_summary_by_category_counts_instances_and_direct_time_in_ms(launchers):
    table = ops_summary_by_category(launchers)
    assert list(table.columns) == [
        "op category",
        "Count",
        "total_direct_kernel_time_ms",
        "Percentage (%)",
        "Cumulative Percentage (%)",
    ]
    assert table["op category"].tolist() == ["GEMM", "elementwise"]
    assert table["Count"].tolist() == [2, 1]
    assert table["total_direct_kernel_time_ms"].tolist() == pytest.approx([0.055, 0.010])
    assert table["Percentage (%)"].tolist() == pytest.approx([55 / 65 * 100, 10 / 65 * 100])
    assert table["Cumulative Percentage (%)"].tolist() == pytest.approx([55 / 65 * 100, 100.0])


def test_ops_summary_groups_by_name_with_sorted_categories(launchers):
    table = ops_summary(launchers)
    assert list(table.columns) == [
        "name",
        "total_direct_kernel_time_sum",
        "total_subtree_kernel_time_sum",
        "total_direct_kernel_time_ms",
        "total_subtree_kernel_time_ms",
        "Count",
        "Categories",
        "Percentage (%)",
        "Cumulative Percentage (%)",
    ]
    mm, linear = table.to_dict("records")
    assert mm["name"] == "aten::mm"
    assert (mm["total_direct_kernel_time_sum"], mm["total_subtree_kernel_time_sum"]) == (55, 55)
    assert mm["Count"] == 2
    assert mm["Categories"] == ["GEMM"]
    assert linear["name"] == "aten::linear"
    assert linear["total_direct_kernel_time_sum"] == 10.0
    assert linear["total_subtree_kernel_time_sum"] == 30.0
    assert linear["total_direct_kernel_time_ms"] == pytest.approx(0.010)
    assert linear["total_subtree_kernel_time_ms"] == pytest.approx(0.030)
    assert linear["Categories"] == ["elementwise"]


def test_ops_summary_lists_every_category_a_name_was_seen_with(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::foo", 0, 20),
            *tb.launch(1, 5, 100, 5, kernel_name=REDUCE),
            tb.cpu_op("aten::foo", 30, 20),
            *tb.launch(2, 35, 200, 5, kernel_name=ELEMENTWISE),
        ]
    )
    table = ops_summary(attribute_launchers(model, default_table()))
    assert table["Categories"].tolist() == [["elementwise", "reduce"]]


def test_ops_unique_args_statistics_and_kernels_aligned_by_position(launchers):
    table = ops_unique_args(launchers)
    assert table["name"].tolist() == ["aten::mm", "aten::linear"]
    mm = table.iloc[0]
    assert mm["thread_name"] == "python main"
    assert mm["num_kernels"] == 2
    assert mm["operation_count"] == 2
    assert mm["total_direct_kernel_time_mean"] == 27.5
    assert mm["total_direct_kernel_time_median"] == 27.5
    assert mm["total_direct_kernel_time_std"] == pytest.approx(5 / math.sqrt(2))  # ddof=1
    assert (mm["total_direct_kernel_time_min"], mm["total_direct_kernel_time_max"]) == (25, 30)
    assert mm["total_direct_kernel_time_sum"] == 55.0
    first_mm = int(launchers.instances.index[launchers.instances["name"] == "aten::mm"][0])
    assert mm["ex_UID"] == first_mm
    # position 0: gemm_a 15 and 20 µs; position 1: gemm_b 15 and 10 µs; ascending by total
    assert mm["kernel_details_summary"] == [
        {
            "name": "gemm_b",
            "stream": 9,
            "count": 2,
            "total_duration_us": 25.0,
            "mean_duration_us": 12.5,
            "median_duration_us": 12.5,
            "std_dev_duration_us": 2.5,
            "min_duration_us": 10.0,
            "max_duration_us": 15.0,
        },
        {
            "name": "gemm_a",
            "stream": 8,
            "count": 2,
            "total_duration_us": 35.0,
            "mean_duration_us": 17.5,
            "median_duration_us": 17.5,
            "std_dev_duration_us": 2.5,
            "min_duration_us": 15.0,
            "max_duration_us": 20.0,
        },
    ]
    assert mm["trunc_kernel_details"] == [
        {"name": "gemm_b", "stream": 9, "mean_duration_us": 12.5},
        {"name": "gemm_a", "stream": 8, "mean_duration_us": 17.5},
    ]
    linear = table.iloc[1]
    assert linear["operation_count"] == 1
    assert math.isnan(linear["total_direct_kernel_time_std"])
    assert linear["total_subtree_kernel_time_sum"] == 30.0
    assert table["Percentage (%)"].tolist() == pytest.approx([55 / 65 * 100, 10 / 65 * 100])


def test_ops_unique_args_keeps_threads_and_arguments_apart(tb):
    small = {"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}
    large = {"Input Dims": [[8, 8], [8, 2]], "Input type": ["float", "float"]}
    model = tb.model(
        [
            tb.thread_name("forward", tid=1),
            tb.thread_name("backward", tid=2),
            tb.cpu_op("aten::mm", 0, 20, args=small),
            *tb.launch(1, 5, 100, 5),
            tb.cpu_op("aten::mm", 30, 20, args=small),
            *tb.launch(2, 35, 110, 5),
            tb.cpu_op("aten::mm", 0, 20, tid=2, args=small),
            *tb.launch(3, 5, 120, 5, tid=2),
            tb.cpu_op("aten::mm", 60, 20, args=large),
            *tb.launch(4, 65, 130, 5),
        ]
    )
    table = ops_unique_args(attribute_launchers(model, default_table()))
    rows = sorted(
        zip(table["thread_name"], table["Input Dims"], table["operation_count"], strict=True)
    )
    assert rows == [
        ("backward", "[[4,8],[8,2]]", 1),
        ("forward", "[[4,8],[8,2]]", 2),
        ("forward", "[[8,8],[8,2]]", 1),
    ]


def test_shares_of_an_all_zero_column_are_zero_not_nan():
    table = with_shares(pd.DataFrame({"t": [0.0, 0.0]}), "t")
    assert table["Percentage (%)"].tolist() == [0.0, 0.0]
    assert table["Cumulative Percentage (%)"].tolist() == [0.0, 0.0]
