"""Collectives whose group holds ranks with no trace (job/outside.py): ranks 0 and 1 of a
4-rank job in lockstep (analyzers/synthetic/what_if_job.py) whose untraced rank 2 computes
1.0-2.0x as long before each all-reduce. The traced ranks' all-reduces end together however
long they waited; the wait beyond the fastest instance is the untraced rank's lateness,
20 GEMMs x 200 µs x (factor - 1) a step: 10.0 ms over the six steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.job.analysis import job_analysis
from rooflens.analyzers.job.overview import job_overview
from rooflens.analyzers.job.report import job_report_md
from rooflens.analyzers.job.summary import summarise_rank
from rooflens.analyzers.synthetic.what_if_job import LockstepPlan, write_lockstep_job

FACTORS = (1.0, 1.5, 2.0, 1.25, 1.0, 1.75)
PLANTED_WAIT_US = 20 * 200.0 * sum(f - 1 for f in FACTORS)  # 10,000 µs
BIG = 1 << 26  # 256 MiB of floats: 5 ms a transfer is far below an H100's NVLink


def _analysis(tmp: Path, **plan):
    base = LockstepPlan(ranks=4, steps=6, slow_rank=2, slow_by_step=FACTORS, **plan)
    paths = write_lockstep_job(tmp, base)
    return job_analysis(summarise_rank(p, platform="H100_SXM") for p in paths)


def test_a_wait_for_an_untraced_rank_is_named_and_measured(tmp_path: Path) -> None:
    a = _analysis(tmp_path, traced=(0, 1))
    o = a.outside
    assert o is not None and (o.collectives, o.of, o.group_size, o.traced) == (6, 6, 4, 2)
    assert o.wait_us == pytest.approx(PLANTED_WAIT_US, rel=1e-6)
    assert o.end_skew_us == pytest.approx(0.0, abs=1.0)
    assert a.missing == (2, 3)
    text = job_report_md(a)
    section = text.split("## Waiting for ranks outside the trace set", 1)[1].split("\n## ", 1)[0]
    assert "the trace set lacks ranks 2-3 of 4" in section
    assert "1.67 ms per step is time beyond the fastest instance" in section  # 10 ms / 6
    assert "not communication to overlap" in section
    assert a.straggler is None  # the traced ranks arrive together: no one held the other
    assert "the ranks arrive together at every collective" in text
    assert "not judged: untraced ranks in its group" in text
    assert job_overview(a).outside_wait_ms == pytest.approx(PLANTED_WAIT_US / 6 / 1e3)


def test_the_same_wait_at_every_instance_is_not_split(tmp_path: Path) -> None:
    paths = write_lockstep_job(
        tmp_path, LockstepPlan(ranks=4, steps=4, slow_rank=2, slow_factor=1.5, traced=(0, 1))
    )
    a = job_analysis(summarise_rank(p) for p in paths)
    assert a.outside is not None and not a.outside.split
    assert "cannot tell a wait for an untraced rank from the transfer" in job_report_md(a)
    assert job_overview(a).outside_wait_ms is None


def test_a_whole_job_has_no_outside_wait_and_keeps_its_bandwidth_finding(tmp_path: Path) -> None:
    whole = _analysis(tmp_path / "whole", message_nelems=BIG, transfer_us=5_000.0)
    assert whole.outside is None
    assert "outside the trace set" not in job_report_md(whole)
    assert any("bus bandwidth" in f.title for f in whole.findings)
    part = _analysis(tmp_path / "part", message_nelems=BIG, transfer_us=5_000.0, traced=(0, 1))
    assert part.outside is not None
    assert not any("bus bandwidth" in f.title for f in part.findings)  # a wait, not the link
