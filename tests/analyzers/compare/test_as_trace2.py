"""Trace 1 replayed with trace 2's GPU times (paired through the tree diff) predicts trace 2's
step when only the GPU differs: the generator's GPU-bound steps with GEMMs of 200 µs against
the same steps with GEMMs of 100 µs (analyzers/synthetic/what_if.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.compare.as_trace2 import as_trace2
from rooflens.analyzers.compare.tree_diff import diff_traces
from rooflens.analyzers.replay.graph import build_graph
from rooflens.analyzers.replay.step_times import replay_steps
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace
from rooflens.analyzers.trace.iterations import find_iterations


@pytest.mark.parametrize(
    ("plan1", "plan2"),
    [
        (StepPlan(), StepPlan(kernel_us=100.0)),  # GPU-bound: the step halves
        (StepPlan(kernel_us=5.0), StepPlan(kernel_us=2.5)),  # host-bound: nothing changes
    ],
)
def test_trace_2s_gpu_times_give_trace_2s_step(tmp_path: Path, plan1, plan2) -> None:
    model1, _ = read_trace(write_step_trace(tmp_path / "one.json.gz", plan1))
    model2, _ = read_trace(write_step_trace(tmp_path / "two.json.gz", plan2))
    graph1 = build_graph(model1)
    paired = as_trace2(diff_traces(model1, model2), graph1)
    assert paired.paired_groups == plan1.steps * plan1.kernels
    assert paired.dropped_us == 0.0 and paired.unplaced_us == 0.0
    iterations = find_iterations(model1)
    predicted = replay_steps(graph1, iterations, paired.changes).replayed_step_ms
    measured2 = replay_steps(build_graph(model2), find_iterations(model2)).measured_step_ms
    assert predicted == pytest.approx(measured2, rel=0.001)
