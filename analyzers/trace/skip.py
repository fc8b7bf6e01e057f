"""Timed events the analysis cannot use are skipped, not trusted, and counted by reason.

A timed event (GPU work, host operators, runtime calls, Python frames, annotations) needs a
name, a finite start and a finite, non-negative duration. A producer's mistakes there
(missing, null or text times, NaN or infinite ones, negative or absurd durations) would leak
NaN into results or wreck the interval arithmetic: one kernel of 1e300 µs made compute -52.9 %
and idle 152.9 % of the GPU time. The row stays in the table (uid = position in the file)
but loses its category and times, so no later stage sees it; trace health reports the counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .schema import GPU_CATEGORIES, HOST_TREE_CATEGORIES

ANNOTATIONS = frozenset({"user_annotation", "gpu_user_annotation"})
TIMED_CATEGORIES = GPU_CATEGORIES | HOST_TREE_CATEGORIES | ANNOTATIONS
MAX_DURATION_US = 86_400e6  # a day: no profiled event lasts that long
MAX_ABS_TS_US = 1e18  # ~31,700 years from the epoch, in µs

# Reason -> how trace health words it (after the count). Order = precedence per event.
REASONS: dict[str, str] = {
    "not_an_object": "'traceEvents' entries that are not JSON objects",
    "time_missing": "without a usable start time or duration (missing, null or text)",
    "time_out_of_range": (
        "with an infinite or absurd time (a duration over a day, or a start beyond 1e18 µs)"
    ),
    "negative_duration": "with a negative duration",
    "no_name": "without a name",
}


def skip_unusable(events: pd.DataFrame) -> dict[str, int]:
    """Hide the unusable timed events of a freshly loaded table; count them per reason."""
    cat = events["cat"].array
    timed_codes = [i for i, c in enumerate(cat.categories) if c in TIMED_CATEGORIES]
    timed = np.isin(cat.codes, timed_codes)
    if not timed.any():
        return {}
    ts = events["ts"].to_numpy(dtype=np.float64)
    dur = events["dur"].to_numpy(dtype=np.float64)
    with np.errstate(invalid="ignore"):
        tests = {
            "time_missing": np.isnan(ts) | np.isnan(dur),
            "time_out_of_range": (np.abs(ts) > MAX_ABS_TS_US) | (np.abs(dur) > MAX_DURATION_US),
            "negative_duration": dur < 0,
            "no_name": events["name"].array.codes < 0,
        }
    left = timed.copy()
    counts: dict[str, int] = {}
    for reason, hit in tests.items():
        hit &= left
        if n := int(np.count_nonzero(hit)):
            counts[reason] = n
            left &= ~hit
    if counts:
        _hide(events, timed & ~left)
    return counts


def _hide(events: pd.DataFrame, rows: np.ndarray) -> None:
    """No category, no times: every stage selects events by category and reads their times."""
    cat = events["cat"].array
    codes = np.where(rows, -1, cat.codes)
    events["cat"] = pd.Categorical.from_codes(codes, categories=cat.categories)
    for column in ("ts", "dur"):
        events[column] = np.where(rows, np.nan, events[column].to_numpy(dtype=np.float64))
