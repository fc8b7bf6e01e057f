"""Iterations: ProfilerStep# spans, else the period of the main thread's top-level operators.

Planted answers come from the plans in synthetic/host.py (exact timing, no jitter); every
expected figure is worked out from the plan constants here. Times are compared to 1 ns.
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.synthetic.host import (
    BLOCKING,
    HOST_BOUND,
    LAUNCH_BOUND,
    write_blocking_item_trace,
    write_host_bound_trace,
    write_launch_bound_trace,
)
from rooflens.analyzers.trace.idle_causes import idle_causes
from rooflens.analyzers.trace.iterations import find_iterations
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.open_trace import open_trace
from rooflens.analyzers.trace.periodicity import find_period, period_score
from tests.helpers.capture_traces import MM_DIMS

NS = 1e-6  # ms


def _model(writer, tmp_path, marked):
    return build_model(load_trace(writer(tmp_path / "t.json.gz", profiler_steps=marked)))


# --- planted traces --------------------------------------------------------------------------


@pytest.mark.parametrize("marked", [True, False])
def test_host_bound_has_five_ten_ms_iterations_each_with_its_gpu_work(tmp_path, marked):
    found = find_iterations(_model(write_host_bound_trace, tmp_path, marked))
    p = HOST_BOUND
    # unmarked, each iteration ends with its `Optimizer.step#SGD.step` annotation
    assert found.method == ("profiler_step" if marked else "optimizer_step")
    assert found.count == p.steps == 5
    assert found.confident
    tpi = found.time_per_iteration
    assert tpi.mean_ms == pytest.approx(p.period_us / 1e3, abs=NS)  # 10 ms
    assert tpi.cv == pytest.approx(0.0, abs=1e-9)
    # 30 µs copy + 39 kernels of 45 µs, back to back: 1.785 ms busy and spanned
    gpu_ms = (30.0 + 39 * 45.0) / 1e3
    assert p.gpu_us / 1e3 == pytest.approx(gpu_ms)
    for it in found.iterations:
        assert it.gpu_events == 1 + 20 + 16 + 3
        assert it.gpu_busy_ms == pytest.approx(gpu_ms, abs=NS)
        assert it.gpu_span_ms == pytest.approx(gpu_ms, abs=NS)
    # the GPU waits 10 - 1.785 = 8.215 ms between consecutive iterations
    assert [g.gpu_idle_ms for g in found.gaps] == pytest.approx([8.215] * 4, abs=NS)
    assert [g.gpu_gap_ms for g in found.gaps] == pytest.approx([8.215] * 4, abs=NS)


def test_marked_steps_are_the_profiler_spans(tmp_path):
    found = find_iterations(_model(write_host_bound_trace, tmp_path, True))
    assert [it.label for it in found.iterations] == [f"ProfilerStep#{k}" for k in range(10, 15)]
    assert [it.host_ms for it in found.iterations] == pytest.approx([10.0] * 5, abs=NS)
    assert not any(it.open_end for it in found.iterations)
    assert [g.host_gap_ms for g in found.gaps] == pytest.approx([0.0] * 4, abs=NS)
    # the window opens with the first GPU event: 9 ms of loading + 8 µs + 10 µs latency in
    assert found.iterations[0].host_start_ms == pytest.approx(-9.018, abs=NS)
    assert found.iterations[0].gpu_start_ms == pytest.approx(0.0, abs=NS)


def test_unmarked_steps_start_after_the_longest_host_pause(tmp_path):
    model = _model(write_host_bound_trace, tmp_path, False)
    found = find_iterations(model, method="repeating_ops")
    assert found.period_ops == 41  # stack, to, 20 linear, 16 backward, 3 foreach
    assert found.coverage == pytest.approx(205 / 206)  # the evaluation op after the loop
    assert "first: aten::stack" in found.detail
    # each starts with aten::stack, 100 µs before the end of loading
    starts = [it.host_start_ms for it in found.iterations]
    assert np.diff(starts) == pytest.approx([10.0] * 4, abs=NS)
    assert starts[0] == pytest.approx(-0.118, abs=NS)
    # nothing marks when the last one ended: its host span stops with its last operator
    assert [it.open_end for it in found.iterations] == [False] * 4 + [True]
    assert found.time_per_iteration.count == 4
    last = found.iterations[-1]
    assert last.host_ms == pytest.approx((100 + 40 * 25 - 3) / 1e3, abs=NS)


@pytest.mark.parametrize("marked", [True, False])
def test_blocking_trace_has_three_eleven_ms_steps(tmp_path, marked):
    found = find_iterations(_model(write_blocking_item_trace, tmp_path, marked))
    assert found.count == BLOCKING.steps == 3
    assert found.time_per_iteration.median_ms == pytest.approx(11.0, abs=NS)
    assert [it.gpu_events for it in found.iterations] == [92] * 3  # 90 GEMMs, 2 copies
    # three bursts of 30 x 100 µs and two 3 µs copies
    assert [it.gpu_busy_ms for it in found.iterations] == pytest.approx([9.006] * 3, abs=NS)
    # from the first GEMM (18 µs in) to the last GEMM's end (10.478 ms in)
    assert [it.gpu_span_ms for it in found.iterations] == pytest.approx([10.46] * 3, abs=NS)
    assert [g.gpu_idle_ms for g in found.gaps] == pytest.approx([0.54] * 2, abs=NS)


@pytest.mark.parametrize("marked", [True, False])
def test_launch_bound_trace_has_two_steps_of_1501_kernels(tmp_path, marked):
    found = find_iterations(_model(write_launch_bound_trace, tmp_path, marked))
    assert found.count == LAUNCH_BOUND.steps == 2
    assert [it.gpu_events for it in found.iterations] == [1501, 1501]
    if not marked:
        # one op name 1500 times in a row must not read as 3000 one-op iterations
        assert found.period_ops == 1501
    assert found.iterations[0].host_ms == pytest.approx(31.0, abs=NS)


def test_asking_for_profiler_steps_on_an_unmarked_trace_finds_none(tmp_path):
    found = find_iterations(_model(write_host_bound_trace, tmp_path, False), method="profiler_step")
    assert found.method == "none"
    assert found.count == 0
    assert found.time_per_iteration.count == 0
    assert found.gaps == []


def test_a_trace_without_operators_has_no_iterations(tb):
    model = tb.model(tb.launch(1, 10.0, 20.0, 5.0))
    found = find_iterations(model)
    assert (found.method, found.count, found.confident) == ("none", 0, False)


def test_a_step_mark_on_a_thread_that_launched_nothing_is_no_iteration(tb):
    """ProfilerStep#3 is also marked on thread 2, which launched nothing, and there ran past
    the next step's start: a stray mark (a loader or logger thread), left out."""
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1,
         "ts": 0.0, "dur": 100.0},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 2,
         "ts": 5.0, "dur": 120.0},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1,
         "ts": 125.0, "dur": 50.0},
        *tb.launch(1, 10.0, 20.0, 5.0),
        *tb.launch(2, 130.0, 140.0, 5.0),
    ]  # fmt: skip
    found = find_iterations(tb.model(events))
    assert [it.label for it in found.iterations] == ["ProfilerStep#3", "ProfilerStep#4"]
    assert [it.host_ms for it in found.iterations] == pytest.approx([0.1, 0.05])
    assert [it.gpu_events for it in found.iterations] == [1, 1]
    # window: first kernel at 20 µs; second step's kernel at 140 µs
    assert found.iterations[1].gpu_start_ms == pytest.approx(0.12)
    assert found.gaps[0].gpu_idle_ms == pytest.approx(0.115)


def test_iterations_end_with_the_optimizer_step_when_no_step_is_marked(tb):
    step = {"ph": "X", "cat": "user_annotation", "name": "Optimizer.step#AdamW.step",
            "pid": 1, "tid": 1}  # fmt: skip
    events = [
        tb.cpu_op("aten::mm", 0.0, 30.0),
        *tb.launch(1, 10.0, 20.0, 5.0),
        {**step, "ts": 40.0, "dur": 10.0},
        tb.cpu_op("aten::mm", 60.0, 30.0),
        *tb.launch(2, 70.0, 80.0, 5.0),
        {**step, "ts": 100.0, "dur": 20.0},
        {**step, "ts": 500.0, "dur": 20.0, "tid": 9},  # a thread that launched nothing
    ]
    found = find_iterations(tb.model(events))
    assert (found.method, found.count) == ("optimizer_step", 2)
    assert [it.host_ms for it in found.iterations] == pytest.approx([0.05, 0.07])
    assert [it.gpu_events for it in found.iterations] == [1, 1]


def test_a_benchmarks_own_marks_are_its_iterations_and_warmup_is_warmup(tb):
    """No ProfilerStep# and no optimizer: `warmup`, then `measure_1`, `measure_2`, each
    launching one kernel; the warm-up mark is the warm-up phase, whatever its length."""

    def mark(name: str, ts: float, dur: float) -> dict:
        return {"ph": "X", "cat": "user_annotation", "name": name, "pid": 1, "tid": 1,
                "ts": ts, "dur": dur}  # fmt: skip

    events = [
        mark("warmup", 0.0, 40.0),
        *tb.launch(1, 10.0, 20.0, 5.0),
        mark("measure_1", 50.0, 40.0),
        *tb.launch(2, 60.0, 70.0, 5.0),
        mark("measure_2", 100.0, 40.0),
        *tb.launch(3, 110.0, 120.0, 5.0),
        mark(
            "iteration 9",
            500.0,
            40.0,
        )
        | {"tid": 5},  # another thread, no launch
    ]
    model = tb.model(events)
    found = find_iterations(model)
    assert (found.method, found.count) == ("benchmark_marks", 3)
    assert [it.label for it in found.iterations] == ["warmup", "measure_1", "measure_2"]
    assert [it.gpu_events for it in found.iterations] == [1, 1, 1]
    phases = idle_causes(model).phases
    assert phases is not None and (phases.warmup, phases.steady) == ([0], [1, 2])


# --- the period finder -----------------------------------------------------------------------


def _times(n: int, pause_at: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """Operators 10 µs long, 1 µs apart, with a 500 µs pause before positions in `pause_at`."""
    start = np.cumsum([500.0 if i in pause_at else 11.0 for i in range(n)])
    return start, start + 10.0


def test_period_of_an_exact_repeat_with_a_prefix():
    body = [1, 2, 3, 2, 3, 4]
    codes = np.array([9] + body * 4)
    period = find_period(codes, *_times(len(codes), {1, 7, 13, 19}))
    assert (period.length, period.phase, period.repeats) == (6, 1, 4)
    assert period.score == pytest.approx(period_score(codes, 6))


def test_a_layer_repeat_inside_the_step_is_not_the_period():
    layer = [5, 6, 7]
    step = [1, *layer * 6, 2, 3]  # embedding, six identical layers, head, loss
    codes = np.array(step * 3)
    period = find_period(codes, *_times(len(codes), set()))
    assert period.length == len(step) == 21
    assert period_score(codes, 3) < period.score


def test_phase_follows_the_longest_pause():
    codes = np.array([1, 2, 3, 4] * 5)
    period = find_period(codes, *_times(len(codes), {2, 6, 10, 14, 18}))
    # phase 2 keeps only 4 whole periods, phases 0 .. 0 keep 5: whole periods come first
    assert (period.length, period.phase, period.repeats) == (4, 0, 5)
    codes = np.array([1, 2, 3, 4] * 5 + [1, 2])
    period = find_period(codes, *_times(len(codes), {2, 6, 10, 14, 18}))
    assert (period.phase, period.repeats) == (2, 5)


def test_no_period_in_a_sequence_without_repeats():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 50, size=400)
    assert find_period(codes, *_times(len(codes), set())) is None
    assert find_period(np.array([1, 2, 1]), *_times(3, set())) is None


def test_operators_grafted_from_a_graph_capture_are_not_iterations(tb) -> None:
    """One graph launch replays a capture of eight identical layers (`aten::mm` each): the
    grafted operators all sit inside the launch call and repeat at the period of a layer.
    They are not the host's steps: the recorded main thread has no repeating sequence."""
    folder = tb.folder / "capture_traces"
    folder.mkdir(exist_ok=True)
    layers = [tb.runtime("hipStreamBeginCapture", 0, 1)]
    for k in range(8):
        layers += [
            tb.cpu_op("aten::mm", 10 + 30 * k, 20, args=MM_DIMS),
            tb.runtime("hipLaunchKernel", 12 + 30 * k, 3, args={"kernel": "gemm_a"}),
        ]
    layers.append(tb.runtime("hipStreamEndCapture", 300, 2))
    annotation = {"ph": "X", "cat": "user_annotation", "name": "capture_32_FULL", "pid": 1}
    tb.write(
        [annotation | {"tid": 1, "ts": -10, "dur": 400}, *layers], name="capture_traces/bs32.json"
    )
    replay = [
        {"ph": "X", "cat": "user_annotation", "pid": 1, "tid": 1, "ts": 0, "dur": 900}
        | {"name": "execute_16_context_0(sq0sk0sqsq0sqsk0)_generation_16(x)"},
        tb.cpu_op("aten::empty", 2, 3),
        tb.runtime("hipGraphLaunch", 10, 20, correlation=100),  # under no operator
        *(tb.kernel("gemm_a", 50 + 20 * j, 10, correlation=100) for j in range(8)),
    ]
    model = open_trace(tb.write(replay, name="replay.json"))
    assert model.capture is not None and model.capture.merged_gpu_events == 8
    found = find_iterations(model)
    assert (found.method, found.count) == ("none", 0), found.detail
