"""Zero-length GPU events and equal timestamps: busy runs, idle gaps and launch gaps agree.

A kernel shorter than the trace's time resolution is written with `"dur": 0`. Alone between
two gaps it is a busy instant that splits them; the gaps, the busy runs and each run's first
event must stay aligned (idle_window.py), which launch_bound.py relies on. One such kernel
among normal ones used to stop `rooflens analyze` with a broadcast error in `launch_gaps`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from rooflens.analyzers.synthetic.host import LAUNCH_BOUND, write_launch_bound_trace
from rooflens.analyzers.trace.idle_causes import idle_causes
from rooflens.analyzers.trace.idle_window import GpuWork, busy_runs, gpu_work
from rooflens.analyzers.trace.intervals import Intervals, merge, subtract
from rooflens.analyzers.trace.launch_bound import launch_bound_stretches, launch_gaps
from rooflens.cli.main import main
from tests.helpers.trace_builder import TraceBuilder

ZERO = 20  # the kernel written with "dur": 0


def assert_aligned(work: GpuWork) -> None:
    """busy[k] starts at its first event; idle[k] is the gap between busy[k] and busy[k+1]."""
    runs = len(work.busy)
    assert len(work.first) == runs
    assert len(work.idle) == max(runs - 1, 0)
    assert_array_equal(work.busy.start, work.start[work.first])
    assert_array_equal(work.idle.start, work.busy.end[:-1])
    assert_array_equal(work.idle.end, work.busy.start[1:])
    assert (work.idle.end > work.idle.start).all()


# whole-microsecond starts and lengths, a third of them zero: ties and instants everywhere
EVENTS = st.lists(
    st.tuples(st.integers(0, 60), st.sampled_from([0, 0, 0, 1, 2, 5, 20])), max_size=40
)


@given(EVENTS)
def test_busy_runs_are_the_merged_set_and_the_gaps_the_window_minus_it(events) -> None:
    events.sort(key=lambda e: e[0])
    start = np.array([e[0] for e in events], dtype=np.float64)
    end = start + np.array([e[1] for e in events], dtype=np.float64)
    first, busy = busy_runs(start, end)
    merged = merge(start, end)
    assert_array_equal(busy.start, merged.start)
    assert_array_equal(busy.end, merged.end)
    assert_array_equal(start[first], busy.start)
    assert (np.diff(first) > 0).all() and (first[:1] == 0).all()
    gaps = Intervals(busy.end[:-1], busy.start[1:])
    assert (gaps.end > gaps.start).all()
    window = Intervals(busy.start[:1], busy.end[-1:])
    assert gaps.length() == pytest.approx(subtract(window, busy).length())
    # every event lies inside its own run
    run = np.searchsorted(first, np.arange(len(start)), side="right") - 1
    assert (start >= busy.start[run]).all() and (end <= busy.end[run]).all()


def launches(zero: int | None = ZERO) -> list[dict]:
    """40 kernels of 5 µs, launched every 20 µs and starting 10 µs after their launch call;
    kernel `zero` has no length. Gaps: 15 µs each, 20 µs after the zero-length one."""
    events = []
    for i in range(40):
        ts = 100.0 + 20 * i
        events += TraceBuilder.launch(i + 1, ts, ts + 10, 0 if i == zero else 5)
    return events


def test_a_zero_length_kernel_is_a_busy_instant_between_two_launch_gaps(tb) -> None:
    model = tb.model(launches())
    work = gpu_work(model)
    assert launch_gaps(work).tolist() == [True] * 39  # every kernel started 10 µs after launch
    assert_aligned(work)
    assert len(work.busy) == 40  # the zero-length kernel is its own run
    assert work.busy.start[ZERO] == work.busy.end[ZERO] == 510.0
    gaps = work.idle.end - work.idle.start
    assert_array_equal(gaps, [15.0] * ZERO + [20.0] + [15.0] * (38 - ZERO))
    assert work.idle.length() == pytest.approx(model.gpu_timeline().pooled.idle_time)
    (row,) = launch_bound_stretches(work).table.itertuples(index=False)
    assert (row.start, row.end, row.events) == (110.0, 895.0, 40)
    assert row.idle_us == pytest.approx(38 * 15 + 20)
    assert (row.median_event_us, row.median_gap_us) == (5.0, 15.0)


def test_the_idle_breakdown_of_that_trace_adds_up(tb) -> None:
    idle = idle_causes(tb.model(launches()))
    assert idle.idle_ms == pytest.approx(0.590)
    assert sum(p.idle_ms for p in idle.parts) == pytest.approx(idle.idle_ms)
    assert idle.part("launch_bound").idle_ms == pytest.approx(0.590)
    assert [s.events for s in idle.stretches] == [40]


def test_equal_timestamps_and_zero_length_events_at_every_position(tb) -> None:
    events = [
        *TraceBuilder.launch(1, 40, 50, 0),  # zero-length, first in the window
        *TraceBuilder.launch(2, 90, 100, 10),
        *TraceBuilder.launch(3, 95, 110, 0),  # touches the end of kernel 2: same run
        *TraceBuilder.launch(4, 140, 150, 0),  # alone between two gaps
        *TraceBuilder.launch(5, 190, 200, 0),  # the same start as kernel 6, on another stream
        *TraceBuilder.launch(6, 100, 200, 10, stream=8),  # queued 100 µs: no launch gap
        *TraceBuilder.launch(7, 290, 300, 0),  # zero-length, last in the window
    ]
    model = tb.model(events)
    work = gpu_work(model)
    # the gap before t = 200 ends with kernel 5, first there in file order, 10 µs after its
    # launch (kernel 6 waited 100 µs in the queue)
    assert launch_gaps(work).tolist() == [True, True, True, True]
    assert_aligned(work)
    assert_array_equal(work.busy.start, [50, 100, 150, 200, 300])
    assert_array_equal(work.busy.end, [50, 110, 150, 210, 300])
    correlation = model.events["correlation"].to_numpy()
    assert correlation[work.uid[work.first]].tolist() == [1, 2, 4, 5, 7]
    assert correlation[work.launch[work.first]].tolist() == [1, 2, 4, 5, 7]  # their launches
    assert work.window == (50.0, 300.0)
    assert work.idle.length() == pytest.approx(model.gpu_timeline().pooled.idle_time)


@pytest.mark.slow
def test_analyze_runs_to_the_end_with_one_zero_length_kernel(tmp_path: Path, capsys) -> None:
    trace = write_launch_bound_trace(tmp_path / "launch_bound.json.gz")
    document = json.loads(gzip.decompress(trace.read_bytes()))
    kernels = [e for e in document["traceEvents"] if e.get("cat") == "kernel"]
    kernels[700]["dur"] = 0  # inside the first step's stretch, gaps on both sides
    broken = tmp_path / "one_zero_length_kernel.json"
    broken.write_text(json.dumps(document))
    out = tmp_path / "run"
    code = main(["analyze", str(broken), "--platform", "MI300X", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    metrics = json.loads((out / "category_data/cpu_idle_metrics.json").read_text())
    causes = {c["cause"]: c["idle_ms"] for c in metrics["host_side"]["idle_causes"]}
    # per step, 1,501 kernels of 4 µs launched 20 µs apart: 1,500 gaps of 16 µs; the kernel
    # without length leaves its 4 µs idle inside the stretch
    per_step = (LAUNCH_BOUND.kernels * (LAUNCH_BOUND.op_us - LAUNCH_BOUND.kernel_us)) / 1e3
    assert causes["launch_bound"] == pytest.approx(LAUNCH_BOUND.steps * per_step + 0.004)
