"""Timeline shares stay within [0, 100] whatever float rounding does to the interval sums."""

from __future__ import annotations

import numpy as np

from rooflens.analyzers.trace.timeline import Timeline, timeline


def _percent(t: Timeline) -> dict[str, float]:
    return {r["type"]: r["percent"] for r in t.rows()}


def test_a_part_a_hair_over_the_total_reads_100_percent_and_a_negative_one_0():
    t = Timeline(
        computation_time=10.000000000001,
        exposed_comm_time=-1e-12,
        exposed_memcpy_time=0.0,
        busy_time=10.0,
        idle_time=0.0,
        total_time=10.0,
        total_comm_time=5.0,
        total_memcpy_time=0.0,
    )
    shares = _percent(t)
    assert shares["computation_time"] == 100.0
    assert shares["exposed_comm_time"] == 0.0
    assert shares["total_comm_time"] == 50.0


def test_an_empty_timeline_has_zero_shares():
    t = timeline(np.empty(0), np.empty(0), np.empty(0, dtype=object))
    assert set(_percent(t).values()) == {0.0}
