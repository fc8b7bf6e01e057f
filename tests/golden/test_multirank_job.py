"""`rooflens analyze-job` on the 8-rank DLRM job: its folder given as a glob, each rank on a
worker process of the embedded cluster, the same straggler summary as TraceLens's multi-rank
report (../shared/reference/tracelens_multirank/): rank 7 last at 5 of 8, rank 1 waiting
longest (docs/multirank.md#fan-out)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

JOB = "traces/multirank/dlrm_8rank"
REFERENCE = "reference/tracelens_multirank/dlrm_8rank/straggler_summary.csv"


def test_the_dlrm_job_through_the_fan_out(shared: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "job"
    argv = ["analyze-job", str(shared / JOB / "worker*.json.gz"), "--out", str(out)]
    assert main([*argv, "--workers", "2", "--until", "none", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    view = doc["overview"]
    assert (doc["ranks_done"], doc["ranks_failed"], view["world_size"]) == (8, 0, 8)
    assert (view["straggler"]["rank"], view["straggler"]["times_last"]) == (7, 5)
    assert view["longest_waiter"]["rank"] == 1
    with (shared / REFERENCE).open() as f:
        expected = {int(r["rank"]): r for r in csv.DictReader(f)}
    with (out / layout.JOB_STRAGGLERS).open() as f:
        ours = {int(r["rank"]): r for r in csv.DictReader(f)}
    assert set(ours) == set(expected) == set(range(8))
    for rank, row in expected.items():
        assert float(ours[rank]["total_wait_time_us"]) == pytest.approx(
            float(row["total_wait_time_us"]), abs=1.0
        )
        assert ours[rank]["times_arrived_last"] == row["times_arrived_last"]
