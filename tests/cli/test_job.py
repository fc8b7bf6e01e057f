"""`rooflens analyze-job`: a generated job end to end on an embedded cluster, its JSON, its
folder, and the inputs it refuses before starting any worker (docs/multirank.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.job.job_folder import read_job, verify_job
from rooflens.analyzers.pipeline.ledger import verify
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.cli.main import main

PLAN = JobPlan(ranks=3, steps=2, collectives=2, slow_rank=1, slow_us=200.0)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("job")
    write_job(folder, PLAN)
    return folder


@pytest.mark.slow
def test_a_job_is_analysed_into_one_folder_with_a_run_per_rank(job, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    argv = ["analyze-job", str(job / "*.json.gz"), "--out", str(out), "--workers", "1"]
    assert main([*argv, "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # not a terminal: no progress lines
    doc = json.loads(captured.out)
    view = doc["overview"]
    assert (doc["ranks_done"], doc["ranks_failed"], view["world_size"]) == (3, 0, 3)
    assert (view["straggler"]["rank"], view["straggler"]["times_last"]) == (1, 4)
    assert view["longest_waiter"]["total_wait_ms"] == pytest.approx(4 * 0.2, rel=0.1)
    # the report links every rank's own report; the planted delay is the saving per step
    report = (out / doc["report"]).read_text()
    for rank in range(3):
        assert f"[analysis.md]({layout.rank_run(rank)}/{layout.REPORT})" in report
    assert view["findings"][0]["mid_ms"] == pytest.approx(2 * 0.2, rel=0.1)
    assert doc["plot"] == layout.JOB_PLOT and (out / layout.JOB_PLOT).stat().st_size > 1000
    assert doc["cluster"] == "embedded LocalCluster (1 worker processes)"
    assert [r["run_folder"] for r in doc["ranks"]] == [layout.rank_run(r) for r in range(3)]
    for rank in range(3):
        assert (out / layout.rank_run(rank) / layout.REPORT).is_file()
        assert verify(out / layout.rank_run(rank)) == []
    assert verify_job(out) == []
    assert f"{layout.rank_run(2)}/{layout.REPORT}" in doc["artifacts"]
    assert main(["validate", str(out)]) == 0
    assert capsys.readouterr().out == "All checks passed.\n"
    first = read_job(out).job_id
    # the same traces again replace the job; the text summary names the straggler
    assert main([*argv, "--until", "none"]) == 0
    text = capsys.readouterr().out
    assert "Analysed 3 rank(s) of 3 on embedded LocalCluster (1 worker processes).\n" in text
    assert "Straggler: rank 1 (arrived last at 4 of 4 collectives; the others waited" in text
    assert read_job(out).job_id != first and not (out / layout.RANKS).exists()
    (out / layout.JOB_STRAGGLERS).write_text("rank\n0\n")  # a table edited after the job
    assert main(["validate", str(out), "--json"]) == 1
    checked = json.loads(capsys.readouterr().out)
    assert checked["valid"] is False
    changed = f"{layout.JOB_STRAGGLERS}: changed after job {checked['job_id']} wrote it"
    assert checked["problems"] == [changed]


def test_duplicate_ranks_are_refused_before_anything_runs(job, tmp_path, capsys) -> None:
    shutil.copy(job / "rank0.pt.trace.json.gz", tmp_path / "again_rank0.json.gz")
    out = tmp_path / "out"
    code = main(["analyze-job", str(job), str(tmp_path / "again_rank0.json.gz"), "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "rooflens: 1 rank(s) given more than once (rank 0: rank0.pt.trace.json.gz, again_rank0"
    )
    assert not out.exists()


def test_a_folder_of_other_files_is_refused(job, tmp_path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["analyze-job", str(job), "--out", str(tmp_path)]) == 2
    assert "already holds files that are not a rooflens job" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_an_unknown_platform_is_refused_first(job, tmp_path, capsys) -> None:
    assert main(["analyze-job", str(job), "--out", str(tmp_path / "o"), "--platform", "X9"]) == 2
    assert "X9" in capsys.readouterr().err
