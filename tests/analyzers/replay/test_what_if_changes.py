"""The `overlap:` and `warmup` changes of `what_if`, on generated traces with the answer
planted: a 3 ms all-reduce the optimizer waits for, and a benchmark whose first iteration
is a 24 s warm-up."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rooflens.analyzers.replay.what_if import ChangeError, what_if
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.phases import WARMUP, write_warmup_trace
from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace

REDUCED = StepPlan(allreduce_us=3_000.0, sync=False, queue_limit=64)


def test_an_overlapped_all_reduce_gives_back_its_time_per_step(tmp_path: Path) -> None:
    """GPU-bound steps of 40 GEMMs of 200 µs, an Adam kernel of 50 µs and a 3 ms all-reduce
    between them: 11.05 ms a step; overlapped, 8.05 ms, as the generator measures it."""
    model, _ = read_trace(write_step_trace(tmp_path / "b.json.gz", REDUCED))
    after, _ = read_trace(write_step_trace(tmp_path / "a.json.gz", replace(REDUCED, overlap=True)))
    result = what_if(model, ["overlap:AllReduce=0", "overlap:AllReduce=0.5"])
    assert result.time_per_step_ms == pytest.approx(11.05, abs=0.01)
    full, half = result.changes
    assert full.events == 8  # one optimizer kernel per step waited for it
    assert full.predicted_step_ms == pytest.approx(what_if(after, []).time_per_step_ms, rel=0.01)
    assert full.saving_ms == pytest.approx(3.0, abs=0.01)
    assert half.saving_ms == pytest.approx(1.5, abs=0.01)
    assert all("AllReduce" not in p.name for p in full.critical_next)


def test_overlap_of_work_nothing_waits_for_is_refused(tmp_path: Path) -> None:
    model, _ = read_trace(write_step_trace(tmp_path / "b.json.gz", REDUCED))
    with pytest.raises(ChangeError, match="no event of another stream waits"):
        what_if(model, ["overlap:multi_tensor=0"])  # the optimizer: its own stream waits only
    with pytest.raises(ChangeError, match="0 to 1"):
        what_if(model, ["overlap:AllReduce=2"])


def test_dropping_the_warm_up_gives_the_steady_step(tmp_path: Path) -> None:
    """Nine iterations: a warm-up of 24.0 s (cudaFree, module loads, first launches), then
    steady ones of 22.025 ms. The window's mean step is (warm-up + 8 steady) / 9; dropped,
    the step is the steady one."""
    model, _ = read_trace(write_warmup_trace(tmp_path / "w.json.gz"))
    result = what_if(model, ["warmup", "gpu:fprop=0.5"])
    dropped = result.changes[0]
    assert dropped.events == 1
    assert dropped.predicted_step_ms == pytest.approx(WARMUP.steady_step_us / 1e3, rel=1e-4)
    planted = (WARMUP.warmup_step_us - WARMUP.steady_step_us) / WARMUP.steps / 1e3
    assert dropped.saving_ms == pytest.approx(planted, rel=1e-4)
    assert result.combined is None  # the warm-up is never part of a combined replay


def test_warm_up_dropped_from_a_window_without_one_is_refused(tmp_path: Path) -> None:
    model, _ = read_trace(write_step_trace(tmp_path / "b.json.gz", StepPlan()))
    with pytest.raises(ChangeError, match="no warm-up"):
        what_if(model, ["warmup"])
