"""Timed events without a name or a usable time are skipped, counted, and kept as rows."""

from __future__ import annotations

import math

from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.skip import MAX_ABS_TS_US, MAX_DURATION_US


def _nameless(event: dict) -> dict:
    del event["name"]
    return event


def mixed_events(tb) -> list[dict]:
    return [
        {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        tb.flow("s", 5, 1, 1, 10),  # flows carry no duration: not timed, never skipped
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 1, "tid": 1, "ts": 3},
        {"ph": "X", "cat": "Trace", "name": "window", "pid": 1, "tid": 1},  # unknown: untouched
        tb.kernel("ok", 10, 5, correlation=5),  # uid 4
        tb.kernel("zero", 20, 0),  # a zero duration is fine
        tb.kernel("longest", 30, MAX_DURATION_US),  # exactly a day: kept
        tb.kernel("too_long", 40, MAX_DURATION_US * 1.0001),
        tb.kernel("far", MAX_ABS_TS_US * 10, 1),
        tb.kernel("negative", 50, -2),
        _nameless(tb.kernel("?", 60, 1)),
        _nameless(tb.kernel("?", 70, -1)),  # negative first: each event counts once
        tb.cpu_op("aten::mm", "soon", 3),  # a text start time
        {**tb.cpu_op("aten::add", 5, 1), "dur": None},
        tb.python_function("nn.Module: X", 1, 4),
    ]


def test_each_unusable_timed_event_is_counted_once_by_its_first_reason(tb):
    trace = tb.load(mixed_events(tb))
    assert dict(trace.skipped) == {
        "time_missing": 2,
        "time_out_of_range": 2,
        "negative_duration": 2,
        "no_name": 1,
    }
    assert dict(trace.bad_values) == {"ts": 1}  # "soon"


def test_skipped_events_keep_their_rows_but_lose_category_and_times(tb):
    events = tb.load(mixed_events(tb)).events
    assert len(events) == 15  # uid = position in the file, still
    skipped = [7, 8, 9, 10, 11, 12, 13]
    assert events["cat"].iloc[skipped].isna().all()
    assert events["ts"].iloc[skipped].isna().all()
    assert events["dur"].iloc[skipped].isna().all()
    kept = events["cat"].tolist()
    assert kept[1:7] == ["ac2g", "cpu_instant_event", "Trace", "kernel", "kernel", "kernel"]
    assert kept[14] == "python_function"
    assert events["ts"].iat[2] == 3.0  # the instant event keeps its time
    assert events["dur"].iat[6] == MAX_DURATION_US


def test_skipped_events_are_reported_in_health_in_plain_words(tb):
    health = assess(build_model(tb.load(mixed_events(tb))))
    assert health.skipped_events == {
        "time_missing": 2,
        "time_out_of_range": 2,
        "negative_duration": 2,
        "no_name": 1,
    }
    assert health.linking.gpu_events == 3  # ok, zero, longest
    warning = next(w for w in health.warnings if w.code == "skipped_events")
    assert warning.severity == "warning"
    assert warning.message.startswith("7 events were left out")
    assert "2 with a negative duration" in warning.message
    assert "1 without a name" in warning.message


def test_a_clean_trace_skips_nothing(tb):
    trace = tb.load([tb.kernel("ok", 10, 5), tb.cpu_op("aten::mm", 1, 3)])
    assert dict(trace.skipped) == {}
    health = assess(build_model(trace))
    assert health.skipped_events == {}
    assert "skipped_events" not in {w.code for w in health.warnings}


def test_a_kernel_of_1e300_us_no_longer_breaks_the_timeline(tb):
    """The issue's example: compute was -52.9 % and idle 152.9 % of the GPU time."""
    model = tb.model([tb.kernel("a", 0, 10), tb.kernel("b", 20, 1e300), tb.kernel("c", 15, 5)])
    rows = {r["type"]: r for r in model.gpu_timeline(include_unlinked=True).pooled.rows()}
    assert rows["computation_time"]["percent"] == 75.0  # 15 µs busy of 20
    assert rows["idle_time"]["percent"] == 25.0
    assert rows["total_time"]["time ms"] == 0.02
    assert not any(math.isnan(r["percent"]) for r in rows.values())
