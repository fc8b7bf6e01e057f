"""`rooflens.analyze_job`: a job from Python, on the generator's job with a planted straggler,
held in memory until saved (the same folder `rooflens analyze-job --until none` writes)."""

from __future__ import annotations

from pathlib import Path

import pytest

import rooflens
from rooflens.analyzers import layout
from rooflens.analyzers.job.inputs import JobInputError
from rooflens.analyzers.job.job_folder import read_job
from rooflens.analyzers.synthetic.job import JobPlan, write_job

PLAN = JobPlan(ranks=3, steps=2, collectives=3, slow_rank=2, slow_us=150.0)

pytestmark = pytest.mark.slow  # an embedded Dask cluster


def test_a_job_is_analysed_in_memory_and_saved_when_asked(tmp_path: Path) -> None:
    write_job(tmp_path / "in", PLAN)
    job = rooflens.analyze_job(tmp_path / "in", workers=1)
    assert isinstance(job, rooflens.Job)
    assert list(job.ranks["rank"]) == [0, 1, 2] and set(job.ranks["status"]) == {"done"}
    straggler = job.overview.straggler
    assert straggler is not None and straggler.rank == 2
    assert straggler.times_last == PLAN.steps * PLAN.collectives
    waits = {w.rank: w.total_wait_us for w in job.analysis.waits}
    assert waits[0] == pytest.approx(PLAN.steps * PLAN.collectives * 150.0, rel=0.1)
    assert len(job.collectives) == PLAN.steps * PLAN.collectives
    assert "rank 2" in job.report and repr(job).startswith("Job(3 ranks analysed, 0 failed")
    assert "<td>P1</td>" in job._repr_html_()
    assert list(tmp_path.iterdir()) == [tmp_path / "in"]  # nothing written until asked

    out = job.save(tmp_path / "job")
    assert [r.status for r in read_job(out).ranks] == ["done"] * 3
    assert (out / layout.JOB_REPORT).read_text("utf-8").startswith("# ")
    assert not (out / layout.rank_run(0)).exists()  # ranks are summaries, not runs


def test_files_that_are_not_a_job_are_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JobInputError):
        rooflens.analyze_job(tmp_path / "nothing*.json.gz", workers=1)
