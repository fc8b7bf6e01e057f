"""`kernel_details_summary` / `trunc_kernel_details` (perf_report.md §7.4)."""

from __future__ import annotations

import math

import pandas as pd

from rooflens.analyzers.report.kernel_stats import group_ids, kernel_summaries, truncate


def kernels(rows: list[tuple[int, int, float, str, int, float]]) -> pd.DataFrame:
    """(group, instance, ts, name, stream, dur) rows."""
    return pd.DataFrame(rows, columns=["group", "instance", "ts", "name", "stream", "dur"])


def test_kernels_are_aligned_by_launch_position_across_instances():
    table = kernels(
        [
            # instance 1: a (2 µs) then b (10 µs); instance 2: a' (4 µs) then b (14 µs)
            (0, 1, 100, "a", 7, 2.0),
            (0, 1, 110, "b", 7, 10.0),
            (0, 2, 200, "a_prime", 8, 4.0),  # another name at position 0: aligned anyway
            (0, 2, 210, "b", 7, 14.0),
        ]
    )
    (summary,) = kernel_summaries(table).values()
    assert summary == [
        {
            "name": "a",  # the template's name and stream
            "stream": 7,
            "count": 2,
            "total_duration_us": 6.0,
            "mean_duration_us": 3.0,
            "median_duration_us": 3.0,
            "std_dev_duration_us": 1.0,  # population std of 2 and 4
            "min_duration_us": 2.0,
            "max_duration_us": 4.0,
        },
        {
            "name": "b",
            "stream": 7,
            "count": 2,
            "total_duration_us": 24.0,
            "mean_duration_us": 12.0,
            "median_duration_us": 12.0,
            "std_dev_duration_us": 2.0,
            "min_duration_us": 10.0,
            "max_duration_us": 14.0,
        },
    ]


def test_position_follows_gpu_start_time_not_row_order():
    table = kernels([(0, 1, 120, "second", 7, 1.0), (0, 1, 100, "first", 7, 5.0)])
    (summary,) = kernel_summaries(table).values()
    # sorted by total ascending: "second" (1 µs) then "first" (5 µs)
    assert [s["name"] for s in summary] == ["second", "first"]


def test_instances_with_another_kernel_count_are_left_out():
    table = kernels(
        [
            (0, 1, 100, "a", 7, 2.0),
            (0, 1, 110, "b", 7, 10.0),
            (0, 2, 200, "a", 7, 100.0),  # one kernel only: skipped
            (0, 3, 300, "a", 7, 4.0),
            (0, 3, 310, "b", 7, 12.0),
        ]
    )
    (summary,) = kernel_summaries(table).values()
    assert [(s["name"], s["count"], s["total_duration_us"]) for s in summary] == [
        ("a", 2, 6.0),
        ("b", 2, 22.0),
    ]


def test_single_instance_has_zero_population_std():
    (summary,) = kernel_summaries(kernels([(0, 1, 100, "a", 7, 3.0)])).values()
    assert summary[0]["std_dev_duration_us"] == 0.0


def test_groups_are_summarised_separately_and_sorted_by_total_ascending():
    table = kernels(
        [
            (0, 1, 100, "big", 7, 50.0),
            (0, 1, 160, "small", 7, 1.0),
            (0, 1, 170, "mid", 9, 10.0),
            (5, 2, 100, "other_group", 7, 3.0),
        ]
    )
    out = kernel_summaries(table)
    assert sorted(out) == [0, 5]
    assert [(s["name"], s["stream"]) for s in out[0]] == [("small", 7), ("mid", 9), ("big", 7)]
    assert [s["name"] for s in out[5]] == ["other_group"]
    assert all(isinstance(s["count"], int) for s in out[0])
    assert all(isinstance(s["stream"], int) for s in out[0])


def test_no_kernels_no_summaries():
    assert kernel_summaries(kernels([])) == {}


def test_truncate_cuts_names_over_64_characters_and_rounds_the_mean():
    long = "k" * 70
    exact = "e" * 64
    summary = [
        {"name": long, "stream": 7, "mean_duration_us": 1.23456, "count": 1},
        {"name": exact, "stream": 9, "mean_duration_us": 2.0, "count": 1},
    ]
    assert truncate(summary) == [
        {"name": "k" * 64 + "...", "stream": 7, "mean_duration_us": 1.23},
        {"name": exact, "stream": 9, "mean_duration_us": 2.0},
    ]


def test_group_ids_keep_missing_values_as_their_own_group():
    frame = pd.DataFrame(
        {"a": ["x", "x", None, None, "y"], "b": [1.0, 1.0, math.nan, math.nan, 1.0]}
    )
    ids = group_ids(frame, ["a", "b"]).tolist()
    assert ids[0] == ids[1]
    assert ids[2] == ids[3]
    assert len({ids[0], ids[2], ids[4]}) == 3


def test_template_is_the_instance_whose_first_kernel_starts_first():
    # instance 9 runs first (ts 100) with two kernels; instance 3 later with one kernel
    table = kernels(
        [
            (0, 9, 100, "a", 7, 2.0),
            (0, 9, 110, "b", 7, 10.0),
            (0, 3, 500, "a", 7, 4.0),
        ]
    )
    (summary,) = kernel_summaries(table).values()
    assert [s["name"] for s in summary] == ["a", "b"]  # instance 9 is the template
