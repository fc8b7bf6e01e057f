"""Interval algebra (perf_report.md §3.3): merge, subtract, length, span."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooflens.analyzers.trace.intervals import Intervals, intersect_length, merge, subtract


def iv(*pairs: tuple[float, float]) -> Intervals:
    """A merged set from (start, end) pairs."""
    return merge(np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float))


def pairs(intervals: Intervals) -> list[tuple[float, float]]:
    return [(float(s), float(e)) for s, e in zip(intervals.start, intervals.end, strict=True)]


# --- merge: hand cases -------------------------------------------------------------------


def test_touching_intervals_merge_into_one():
    assert pairs(iv((0, 5), (5, 10))) == [(0, 10)]


def test_overlapping_intervals_merge_into_their_union():
    assert pairs(iv((0, 6), (4, 10))) == [(0, 10)]


def test_a_nested_interval_is_absorbed_by_the_one_around_it():
    assert pairs(iv((2, 3), (0, 10))) == [(0, 10)]


def test_a_short_interval_inside_a_long_one_does_not_end_the_run_early():
    # after (2, 3) the run must still reach 10, so (9, 12) joins and (11, 12) too
    assert pairs(iv((0, 10), (2, 3), (9, 12), (11, 12))) == [(0, 12)]
    assert pairs(iv((0, 10), (2, 3), (10.5, 12))) == [(0, 10), (10.5, 12)]


def test_disjoint_intervals_stay_apart_and_come_out_sorted():
    merged = iv((20, 30), (0, 5), (7, 8))
    assert pairs(merged) == [(0, 5), (7, 8), (20, 30)]
    assert merged.length() == 16
    assert merged.span() == 30
    assert len(merged) == 3


def test_merging_nothing_gives_the_empty_set():
    merged = merge(np.empty(0), np.empty(0))
    assert len(merged) == 0
    assert merged.length() == 0
    assert merged.span() == 0
    assert len(Intervals.empty()) == 0


def test_a_zero_length_interval_is_kept_but_measures_nothing():
    merged = iv((7, 7), (0, 5))
    assert pairs(merged) == [(0, 5), (7, 7)]
    assert merged.length() == 5
    assert merged.span() == 7


def test_a_zero_length_interval_at_a_boundary_joins_its_neighbours():
    assert pairs(iv((0, 5), (5, 5), (5, 10))) == [(0, 10)]
    assert pairs(iv((3, 3), (3, 3))) == [(3, 3)]


def test_merge_accepts_plain_lists():
    assert pairs(merge([4, 0], [6, 1])) == [(0, 1), (4, 6)]


# --- subtract: hand cases ----------------------------------------------------------------


def test_subtract_cuts_holes_out_of_an_interval():
    result = subtract(iv((0, 10)), iv((2, 3), (5, 6)))
    assert pairs(result) == [(0, 2), (3, 5), (6, 10)]
    assert result.length() == 8


def test_subtract_trims_both_edges_across_several_intervals():
    result = subtract(iv((0, 10), (20, 30)), iv((5, 25)))
    assert pairs(result) == [(0, 5), (25, 30)]


def test_subtracting_a_cover_removes_everything():
    assert len(subtract(iv((2, 4), (6, 8)), iv((0, 10)))) == 0
    assert len(subtract(iv((2, 4)), iv((2, 4)))) == 0


def test_subtracting_a_touching_interval_removes_nothing():
    assert pairs(subtract(iv((0, 5)), iv((5, 10)))) == [(0, 5)]
    assert pairs(subtract(iv((5, 10)), iv((0, 5)))) == [(5, 10)]


def test_subtracting_the_empty_set_returns_the_set_unchanged():
    assert pairs(subtract(iv((1, 2), (4, 8)), Intervals.empty())) == [(1, 2), (4, 8)]


def test_subtracting_from_the_empty_set_gives_the_empty_set():
    assert len(subtract(Intervals.empty(), iv((0, 10)))) == 0


def test_subtracting_a_zero_length_interval_removes_no_time():
    assert subtract(iv((0, 10)), iv((4, 4))).length() == 10


def test_a_zero_length_interval_minus_anything_measures_nothing():
    assert subtract(iv((5, 5)), iv((0, 1))).length() == 0


def test_intersect_length_is_the_time_covered_by_both():
    assert intersect_length(iv((0, 10), (20, 30)), iv((5, 25))) == 10
    assert intersect_length(iv((0, 10)), Intervals.empty()) == 0


# --- properties on an integer grid ----------------------------------------------------------

GRID = 50
raw_intervals = st.lists(
    st.tuples(st.integers(0, GRID), st.integers(0, GRID)).map(lambda p: (min(p), max(p))),
    max_size=12,
)


def merged(raw: list[tuple[int, int]]) -> Intervals:
    return merge(np.array([a for a, _ in raw], float), np.array([b for _, b in raw], float))


def cells(raw) -> set[int]:
    """Unit cells [k, k+1] covered by any interval: the measure on an integer grid."""
    return {k for a, b in raw for k in range(int(a), int(b))}


def assert_canonical(intervals: Intervals) -> None:
    start, end = intervals.start, intervals.end
    assert np.all(start <= end)
    assert np.all(start[1:] > end[:-1])  # sorted, disjoint and not even touching


@given(raw_intervals)
def test_merge_output_is_sorted_disjoint_and_non_touching(raw):
    assert_canonical(merged(raw))


@given(raw_intervals)
def test_merged_length_is_the_measure_of_the_union(raw):
    assert merged(raw).length() == len(cells(raw))


@given(raw_intervals)
def test_merge_covers_exactly_the_cells_of_its_input(raw):
    assert cells(pairs(merged(raw))) == cells(raw)


@given(raw_intervals, raw_intervals)
def test_subtract_removes_exactly_the_intersection(raw_a, raw_b):
    a, b = merged(raw_a), merged(raw_b)
    both = cells(raw_a) & cells(raw_b)
    assert subtract(a, b).length() == a.length() - len(both)
    assert intersect_length(a, b) == len(both)


@given(raw_intervals, raw_intervals)
def test_subtract_result_shares_no_time_with_what_was_subtracted(raw_a, raw_b):
    result = subtract(merged(raw_a), merged(raw_b))
    assert cells(pairs(result)) & cells(raw_b) == set()
    assert cells(pairs(result)) <= cells(raw_a)


@given(raw_intervals, raw_intervals)
def test_subtract_output_is_sorted_disjoint_and_non_touching(raw_a, raw_b):
    assert_canonical(subtract(merged(raw_a), merged(raw_b)))


@pytest.mark.parametrize("scale", [1e-3, 1e6])
def test_merge_and_subtract_work_on_non_integer_microseconds(scale):
    a = merge(np.array([0.0, 2.5]) * scale, np.array([2.5, 4.0]) * scale)
    assert pairs(a) == [(0.0, 4.0 * scale)]
    assert subtract(a, merge(np.array([1.0 * scale]), np.array([3.0 * scale]))).length() == (
        pytest.approx(2.0 * scale)
    )
