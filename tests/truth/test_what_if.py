"""Truth corpus: predictions held against the "after" trace the generator timed itself
(analyzers/synthetic/what_if.py), never against the simulator.

Eight training steps of 40 GEMM launches; the step time compared is the median of steps 2-7.
- Host-bound (5 µs kernels launched 30 µs apart): GEMMs twice as fast save ~0 ms.
- Starved GPU (a 20 ms loader before each step, the step ending in a device synchronise):
  removing the loader saves the 20 ms.
- Queue full (no synchronise, 64 launches queued, the GPU 8 ms a step behind a 3.2 ms host):
  removing a 2 ms loader saves ~0 ms.
- GPU-bound: GEMMs twice as fast halve the step.
- A loss `.item()` after the launches, then 3 ms of logging: removing the `.item()` lets the
  logging overlap the GPU's 8 ms, saving its 3 ms.
- A 4 ms pageable batch upload each step (the host waits for it): made async from pinned
  memory at twice the bandwidth, the step loses the 2 ms of copy (the launches it held back
  were hidden behind the GEMMs anyway).
- An all-reduce of 3 ms on its own stream that the optimizer waits for, the host running
  ahead of a GPU-bound step: overlapped, the step loses the 3 ms.
- Host-bound GEMMs, then a 1.5 ms all-reduce waiting for them by a recorded stream wait that
  never bound (the host launched it after they ended): GEMMs 20x slower make the wait bind,
  and the step grows by the GEMMs' new time, not by that time less the all-reduce.
Each prediction is within 5 % of the step the generator measured after the change.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rooflens.analyzers.replay.changes import (
    calls_made_async,
    gpu_events_scaled,
    host_spans_removed,
    waits_released,
)
from rooflens.analyzers.replay.graph import build_graph
from rooflens.analyzers.replay.simulate import Changes
from rooflens.analyzers.replay.step_times import replay_steps
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.idle import LOADER_NAMES
from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace
from rooflens.analyzers.trace.iterations import find_iterations
from tests.helpers.truth import ranked

LOADER = LOADER_NAMES[False]


def _steady(path: Path, change: str | None = None) -> tuple[float, float]:
    """(measured, predicted) median step in ms over steps 2-7, after `change`."""
    model, _ = read_trace(path)
    graph = build_graph(model)
    changes = Changes()
    if change == "no loader":
        changes = host_spans_removed(model, graph, np.flatnonzero(model.names == LOADER), change)
    elif change == "no item":
        changes = host_spans_removed(
            model, graph, np.flatnonzero(model.names == "aten::item"), change
        )
    elif change == "pinned":
        uploads = np.flatnonzero(model.names == "aten::to")
        changes = calls_made_async(model, graph, uploads, 0.5, change)
    elif change == "2x GEMMs":
        changes = gpu_events_scaled(graph, graph.gpu.uid, 0.5, change)
    elif change == "20x slower GEMMs":
        gemms = graph.gpu.uid[np.char.find(model.names[graph.gpu.uid].astype(str), "gemm") >= 0]
        changes = gpu_events_scaled(graph, gemms, 20.0, change)
    elif change == "all-reduce overlapped":
        reduces = np.flatnonzero(np.char.find(model.names.astype(str), "AllReduce") >= 0)
        changes = waits_released(graph, reduces, 0.0, change)
    steps = replay_steps(graph, find_iterations(model), changes).iterations[2:]
    return (
        float(np.median([s.measured_ms for s in steps])),
        float(np.median([s.replayed_ms for s in steps])),
    )


CASES = {
    "host_bound_faster_gemms": (StepPlan(kernel_us=5.0), "2x GEMMs", StepPlan(kernel_us=2.5), 0.0),
    "starved_gpu_no_loader": (StepPlan(loader_us=20_000.0), "no loader", StepPlan(), 20.0),
    "full_queue_no_loader": (
        StepPlan(loader_us=2_000.0, sync=False, queue_limit=64),
        "no loader",
        StepPlan(sync=False, queue_limit=64),
        0.0,
    ),
    "gpu_bound_faster_gemms": (StepPlan(), "2x GEMMs", StepPlan(kernel_us=100.0), 4.0),
    "pinned_upload": (
        StepPlan(upload_us=4_000.0),
        "pinned",
        StepPlan(upload_us=2_000.0, pinned=True),
        2.0,
    ),
    "sync_removed": (
        StepPlan(item=True, host_work_us=3_000.0),
        "no item",
        StepPlan(host_work_us=3_000.0),
        3.0,
    ),
    "all_reduce_overlapped": (
        StepPlan(allreduce_us=3_000.0, sync=False, queue_limit=64),
        "all-reduce overlapped",
        StepPlan(allreduce_us=3_000.0, sync=False, queue_limit=64, overlap=True),
        3.0,
    ),
    "recorded_wait_binds_once_gemms_are_slower": (
        StepPlan(kernel_us=5.0, kernels=10, allreduce_us=1_500.0, sync_events=True),
        "20x slower GEMMs",
        StepPlan(kernel_us=100.0, kernels=10, allreduce_us=1_500.0, sync_events=True),
        -0.7,
    ),
}


def test_an_unrecorded_wait_that_never_bound_is_missed(tmp_path: Path):
    """Without CUPTI's stream-wait records, the all-reduce's wait for the GEMMs never showed
    (the host launched it after they ended), so slower GEMMs are predicted to overlap it: the
    records are what makes the case above right."""
    before, change, after, _ = CASES["recorded_wait_binds_once_gemms_are_slower"]
    before, after = replace(before, sync_events=False), replace(after, sync_events=False)
    _, predicted = _steady(write_step_trace(tmp_path / "before.json.gz", before), change)
    after_ms, _ = _steady(write_step_trace(tmp_path / "after.json.gz", after))
    assert predicted < 0.9 * after_ms


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_prediction_matches_the_step_measured_after_the_change(tmp_path: Path, case: str):
    before, change, after, planted_saving_ms = CASES[case]
    measured, identity = _steady(write_step_trace(tmp_path / "before.json.gz", before))
    assert identity == pytest.approx(measured, rel=0.001)  # the identity replay
    _, predicted = _steady(write_step_trace(tmp_path / "before.json.gz", before), change)
    after_ms, _ = _steady(write_step_trace(tmp_path / "after.json.gz", after))
    assert predicted == pytest.approx(after_ms, rel=0.05)
    assert measured - predicted == pytest.approx(planted_saving_ms, abs=0.05 * measured)


def test_the_plans_differ_only_in_the_change() -> None:
    assert replace(StepPlan(loader_us=20_000.0), loader_us=0.0) == StepPlan()


def test_exposed_communication_is_priced_by_overlapping_it(tmp_path: Path) -> None:
    """The all-reduce case analysed: exposed communication is P1 and its estimate (25/50/75 %
    of the exposure recovered) is replayed as the optimizer waiting for 75/50/25 % of each
    3 ms all-reduce: 0.75/1.5/2.25 ms a step, on a GPU-bound step of 11.05 ms."""
    before, *_ = CASES["all_reduce_overlapped"]
    top = ranked(write_step_trace(tmp_path / "r.json.gz", before), "H100").priorities().items[0]
    assert (top.category, top.saving.pool) == ("multi_kernel", "exposed_comm")
    price = top.replay
    assert price is not None and price.change.startswith("overlapped")
    assert price.step_ms == pytest.approx(11.05, abs=0.01)
    steps = (price.step_saving_low_ms, price.step_saving_mid_ms, price.step_saving_high_ms)
    assert steps == pytest.approx((0.75, 1.5, 2.25), abs=0.01)
    assert price.path_share == pytest.approx(1.0)
