"""Interval algebra on sorted, disjoint [start, end] sets held as two float arrays.

`merge` turns any bag of intervals into such a set (touching intervals merge); `subtract`
removes one set from another. Both are vectorised: no Python loop per interval.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd


class Intervals(NamedTuple):
    """Sorted, pairwise disjoint, non-touching intervals."""

    start: np.ndarray
    end: np.ndarray

    @classmethod
    def empty(cls) -> Intervals:
        return cls(np.empty(0), np.empty(0))

    def length(self) -> float:
        return float(np.sum(self.end - self.start))

    def span(self) -> float:
        """First start to last end (0 for an empty set)."""
        return float(self.end[-1] - self.start[0]) if len(self.start) else 0.0

    def __len__(self) -> int:
        return len(self.start)


def merge(start: np.ndarray, end: np.ndarray) -> Intervals:
    """Union of intervals; an interval starting exactly where another ends joins it."""
    start = np.asarray(start, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    if start.size == 0:
        return Intervals.empty()
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    # a new run begins where the start lies beyond everything seen so far
    new_run = np.empty(s.size, dtype=bool)
    new_run[0] = True
    new_run[1:] = s[1:] > reach[:-1]
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, s.size - 1)
    return Intervals(s[first], reach[last])


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """The parts of `a` not covered by `b` (both merged sets)."""
    if len(a) == 0 or len(b) == 0:
        return a
    points = np.concatenate([a.start, a.end, b.start, b.end])
    delta_a = np.concatenate([np.ones(len(a)), -np.ones(len(a)), np.zeros(2 * len(b))])
    delta_b = np.concatenate([np.zeros(2 * len(a)), np.ones(len(b)), -np.ones(len(b))])
    order = np.argsort(points, kind="stable")
    points, delta_a, delta_b = points[order], delta_a[order], delta_b[order]
    # coverage after each boundary; apply all boundaries at one position together
    in_a = np.cumsum(delta_a)
    in_b = np.cumsum(delta_b)
    last_at_point = np.append(points[1:] != points[:-1], True)
    points, in_a, in_b = points[last_at_point], in_a[last_at_point], in_b[last_at_point]
    keep = (in_a[:-1] > 0) & (in_b[:-1] <= 0)
    seg_start, seg_end = points[:-1][keep], points[1:][keep]
    return merge(seg_start, seg_end)


def intersect_length(a: Intervals, b: Intervals) -> float:
    """Total length covered by both sets."""
    return a.length() - subtract(a, b).length()


def length_before(a: Intervals, at: np.ndarray) -> np.ndarray:
    """Per time in `at`, how much of the set lies before it: every interval before the last
    one starting by then, and the part of that one (two searches, no loop)."""
    at = np.asarray(at, dtype=np.float64)
    if len(a) == 0:
        return np.zeros(len(at))
    before = np.concatenate(([0.0], np.cumsum(a.end - a.start)))  # the first m intervals
    k = np.searchsorted(a.start, at, side="right")  # intervals starting at or before it
    last = np.maximum(k - 1, 0)
    part = np.clip(np.minimum(at, a.end[last]) - a.start[last], 0.0, None)
    return np.where(k > 0, before[last] + part, 0.0)


def grouped_union_length(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Busy length (union of intervals) per group id 0..max(group); one vectorised pass."""
    n_groups = int(group.max()) + 1 if len(group) else 0
    if len(group) == 0:
        return np.zeros(n_groups)
    order = np.lexsort((start, group))
    g, s, e = group[order], start[order], end[order]
    reach = pd.Series(e).groupby(g).cummax().to_numpy()
    new_run = np.ones(len(g), dtype=bool)
    new_run[1:] = (g[1:] != g[:-1]) | (s[1:] > reach[:-1])
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, len(g) - 1)
    return np.bincount(g[first], weights=reach[last] - s[first], minlength=n_groups)
