"""Truth corpus: the ranks of a job replayed together (job/joint_replay.py), held against the
job the generator writes after the change (analyzers/synthetic/what_if_job.py).

Four ranks in lockstep, six steps: 20 GEMMs of 200 µs launched 30 µs apart, then an all-reduce
that ends on every rank 500 µs after the last rank arrives, an optimizer kernel, a device
synchronise. Rank 2's GEMMs take 1.5x as long (300 µs), so every rank waits 2 ms a step for it.
- The straggler fixed (rank 2's GEMMs at 2/3 of their time): every rank's step loses the 2 ms,
  as the generator measures with no slow rank.
- Rank 0's GEMMs twice as fast: no step gets shorter (rank 0 only waits longer), where
  rank 0's trace replayed alone claims the 2 ms.
Rank clocks skewed by 1.5 ms per rank change nothing: the offsets are recovered from the
collectives' ends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.job.joint_replay import job_what_if
from rooflens.analyzers.replay.what_if import ChangeError, what_if
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.what_if_job import LockstepPlan, write_lockstep_job

SLOW = LockstepPlan(slow_rank=2, slow_factor=1.5, clock_skew_us=1_500.0)
FIXED = "rank2@gpu:sm90_xmma_gemm=0.666667"


def _models(folder: Path, plan: LockstepPlan):
    folder.mkdir()
    return {r: read_trace(p)[0] for r, p in enumerate(write_lockstep_job(folder, plan))}


@pytest.fixture(scope="module")
def slow(tmp_path_factory):
    return _models(tmp_path_factory.mktemp("job") / "slow", SLOW)


def test_the_joint_identity_replay_gives_back_every_rank_and_its_clock(slow) -> None:
    result = job_what_if(slow, [])
    assert result.matched_collectives == SLOW.steps
    for rank in result.ranks:
        assert rank.replay_error_pct < 0.01
        assert rank.clock_offset_us == pytest.approx(rank.rank * SLOW.clock_skew_us, abs=0.01)
    assert {r.rank: r.last_arrivals for r in result.ranks} == {0: 0, 1: 0, 2: 6, 3: 0}
    slow_gemms = SLOW.kernels * SLOW.kernel_us * SLOW.slow_factor
    assert result.time_per_step_ms == pytest.approx((slow_gemms + 575.0) / 1e3, abs=0.01)


def test_fixing_the_straggler_moves_every_rank(slow, tmp_path: Path) -> None:
    fixed = _models(tmp_path / "fixed", LockstepPlan(clock_skew_us=SLOW.clock_skew_us))
    measured = max(what_if(m, []).time_per_step_ms for m in fixed.values())
    (prediction,) = job_what_if(slow, [FIXED]).changes
    assert prediction.predicted_step_ms == pytest.approx(measured, rel=0.05)
    planted = SLOW.kernels * SLOW.kernel_us * (SLOW.slow_factor - 1) / 1e3  # 2 ms a step
    assert prediction.saving_ms == pytest.approx(planted, abs=0.01)
    assert prediction.events == SLOW.kernels * SLOW.steps  # rank 2's GEMMs only


def test_a_rank_that_waits_gains_nothing_from_faster_kernels(slow) -> None:
    (prediction,) = job_what_if(slow, ["rank0@gpu:sm90_xmma_gemm=0.5"]).changes
    assert prediction.saving_ms == pytest.approx(0.0, abs=0.005)
    assert prediction.last_arrivals == {2: SLOW.steps}  # rank 2 is still the last to arrive
    # alone, rank 0's trace cannot know that its all-reduce waited for rank 2
    (alone,) = what_if(slow[0], ["gpu:sm90_xmma_gemm=0.5"]).changes
    assert alone.saving_ms > 1.9


def test_a_job_change_names_a_rank_of_the_job(slow) -> None:
    with pytest.raises(ChangeError, match="no trace of rank 9"):
        job_what_if(slow, ["rank9@gpu:sm90=0.5"])
    with pytest.raises(ChangeError, match="steady steps already"):
        job_what_if(slow, ["warmup"])
    with pytest.raises(ChangeError, match="at least two ranks"):
        job_what_if({0: slow[0]}, [])
