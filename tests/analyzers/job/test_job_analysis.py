"""The job analysis, report and plot on generated jobs whose straggler, delay and message sizes
were planted (analyzers/synthetic/job.py, docs/multirank.md#the-job-analysis)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rooflens.analyzers.job.analysis import (
    EmptyJob,
    JobAnalysis,
    RankFailure,
    job_analysis,
)
from rooflens.analyzers.job.overview import job_overview
from rooflens.analyzers.job.plot import draw_job_plot
from rooflens.analyzers.job.report import job_report_md
from rooflens.analyzers.job.summary import RankSummary, summarise_rank
from rooflens.analyzers.synthetic.host import write_host_bound_trace
from rooflens.analyzers.synthetic.job import JobPlan, write_job


def summaries(tmp: Path, plan: JobPlan) -> list[RankSummary]:
    return [summarise_rank(path) for path in write_job(tmp, plan)]


def straggler_finding(a: JobAnalysis):
    return next(f for f in a.findings if f.title.startswith("Rank "))


@pytest.mark.parametrize(
    "plan",
    [
        JobPlan(ranks=16, steps=3, collectives=4, slow_rank=11, slow_us=250.0),
        JobPlan(ranks=64, steps=2, collectives=3, slow_rank=40, slow_us=120.0),
    ],
    ids=["16 ranks", "64 ranks"],
)
@pytest.mark.slow
def test_a_planted_straggler_is_named_and_its_saving_is_the_planted_delay(
    tmp_path: Path, plan: JobPlan
) -> None:
    a = job_analysis(summaries(tmp_path, plan))
    assert a.straggler.rank == plan.slow_rank == a.slowest_rank and a.steps == plan.steps
    planted_ms = plan.straggler_delay_us() / 1e3  # per step: collectives x slow_us
    finding = straggler_finding(a)
    assert finding.p_number == 1 and finding.category == "job"
    assert finding.saving.mid_ms == pytest.approx(planted_ms, rel=0.1)
    assert finding.saving.low_ms == pytest.approx(planted_ms, rel=0.1)  # its compute explains it
    (cause,) = a.causes
    assert (cause.kind, cause.op) == ("compute", "aten::mm")
    assert cause.excess_us / plan.steps == pytest.approx(plan.straggler_delay_us(), rel=0.1)
    assert a.imbalance.max_rank == plan.slow_rank
    assert a.imbalance.max_over_median == pytest.approx((300 + plan.slow_us) / 300, rel=0.01)
    text = job_report_md(a)
    assert f"**Rank {plan.slow_rank} arrives last** at {plan.steps * plan.collectives} of" in text
    assert f"| {plan.slow_rank} (straggler) |" in text
    assert "more GPU compute, most of it in `aten::mm`" in text


@pytest.mark.slow
def test_a_late_batch_is_named_as_late_data(tmp_path: Path) -> None:
    plan = JobPlan(ranks=16, steps=3, collectives=4, late_rank=5, late_us=800.0)
    a = job_analysis(summaries(tmp_path, plan))
    assert a.straggler.rank == 5
    assert straggler_finding(a).saving.mid_ms == pytest.approx(0.8, rel=0.1)
    kinds = [c.kind for c in a.causes]
    assert kinds == ["late_data", "host_idle"]
    assert a.causes[0].excess_us == pytest.approx(3 * 800.0)  # every step's loading
    assert a.causes[1].excess_us == pytest.approx(2 * 800.0, rel=0.01)  # step 0's is before


@pytest.mark.slow
def test_bus_bandwidth_is_the_hand_computed_one(tmp_path: Path) -> None:
    # 2^18 fp32 = 1 MiB in 40 µs: 26.2144 GB/s; all-reduce over 16 ranks moves 2 x 15/16
    a = job_analysis(summaries(tmp_path / "ar", JobPlan(ranks=16, steps=1)))
    row = a.bandwidth.iloc[0]
    assert (row["msg_bytes"], row["comm_latency"]) == (1 << 20, 40.0)
    assert row["algbw_gbps"] == pytest.approx(26.2144)
    assert row["busbw_gbps"] == pytest.approx(26.2144 * 2 * 15 / 16)  # 49.152
    assert (row["link"], row["link_gbps"]) == ("InfiniBand NDR", 50.0)  # 16 ranks: 2 nodes
    assert row["link_pct"] == pytest.approx(98.304)
    # all-gather over 8 ranks (one node: NVLink 4, 450 GB/s one way): (n-1)/n
    gather = JobPlan(ranks=8, steps=1, collective="_allgather_base")
    a = job_analysis(summaries(tmp_path / "ag", gather))
    row = a.bandwidth.iloc[0]
    assert a.collectives.collectives["in_nelems"].iloc[0] == (1 << 18) // 8
    assert row["busbw_gbps"] == pytest.approx(26.2144 * 7 / 8)
    assert row["link_pct"] == pytest.approx(100 * 22.9376 / 450)
    assert not a.findings[1:]  # 1 MiB is latency-bound: no bandwidth finding


def test_a_slow_large_collective_is_a_finding_with_the_hand_computed_saving(tmp_path):
    # 64 MiB all-reduce over 8 ranks taking 2 ms: 58.7 GB/s bus against NVLink 4's 450;
    # at the link it would take 2^26 x 1.75 / 450e3 = 260.97 µs
    plan = JobPlan(ranks=8, steps=1, collectives=4, transfer_us=2000.0, nelems=1 << 24)
    a = job_analysis(summaries(tmp_path, plan))
    slow = next(f for f in a.findings if f.title.startswith("`allreduce`"))
    ideal = (1 << 26) * 1.75 / 450e3
    expected = [4 * (2000.0 - ideal / share) / 1e3 for share in (0.75, 0.875, 1.0)]
    assert slow.saving.range_ms == pytest.approx(expected)
    assert "13 % of the `NVLink 4` link" in slow.title


def test_failed_and_missing_ranks_are_reported(tmp_path: Path) -> None:
    ranks = summaries(tmp_path, JobPlan(ranks=6, steps=1, slow_rank=2, slow_us=100.0))
    failed = RankFailure(path="rank5.pt.trace.json.gz", reason="not a trace", rank=5)
    a = job_analysis([s for s in ranks if s.rank not in (3, 5)], [failed])
    assert a.ranks == (0, 1, 2, 4) and a.missing == (3,) and a.failures == (failed,)
    assert a.straggler.rank == 2
    text = job_report_md(a, {r: f"ranks/rank-{r}/analysis.md" for r in a.ranks}, "job.png")
    assert "- rank 5 (`rank5.pt.trace.json.gz`): not a trace" in text
    assert "missing (no trace given): ranks 3" in text
    assert "[analysis.md](ranks/rank-4/analysis.md)" in text and "](job.png)" in text
    view = job_overview(a)
    assert (view.missing, view.failures[0].reason, view.straggler.rank) == ([3], "not a trace", 2)
    assert view.findings[0].mid_ms == pytest.approx(4 * 0.1, rel=0.1)  # 4 collectives x 100 µs
    with pytest.raises(EmptyJob, match="no rank"):
        job_analysis([], [failed])


@pytest.mark.slow
def test_the_plot_is_a_png_and_only_it_imports_matplotlib(tmp_path: Path) -> None:
    a = job_analysis(summaries(tmp_path, JobPlan(ranks=4, steps=1, slow_rank=1, slow_us=80.0)))
    plot = draw_job_plot(a)
    assert plot.drawn and plot.png_bytes.startswith(b"\x89PNG")
    code = (
        "import sys; import rooflens.analyzers.job.report, rooflens.analyzers.job.plot; "
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_one_rank_or_no_collective_names_no_straggler(tmp_path: Path) -> None:
    one = summaries(tmp_path / "one", JobPlan(ranks=2, steps=1, slow_rank=1, slow_us=80.0))[:1]
    a = job_analysis(one)
    assert a.straggler is None and a.findings == () and a.missing == (1,)
    assert "No rank is named: one rank waits for no other." in job_report_md(a)
    trace = write_host_bound_trace(tmp_path / "host.json")  # no collective at all
    a = job_analysis([summarise_rank(trace, rank=r) for r in (0, 1)])
    assert a.straggler is None and a.findings == () and a.collectives.collectives.empty
    text = job_report_md(a)
    assert "No rank is named: no collective was matched." in text
    assert "No rank has exposed communication." in text and draw_job_plot(a).drawn
