"""Cross-rank matching and the straggler summary on generated jobs whose waits were planted
(analyzers/synthetic/job.py, docs/multirank.md#the-synthetic-job-generator)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.job.collectives import (
    RankCollectives,
    collectives_of_file,
    rank_collectives,
)
from rooflens.analyzers.job.matching import DuplicateRanks, match_collectives
from rooflens.analyzers.job.stragglers import longest_waiter, straggler, straggler_summary
from rooflens.analyzers.job.tables import implicit_sync_table, straggler_table
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

SLOW = JobPlan(ranks=16, slow_rank=11, slow_us=250.0)
SKEWED = JobPlan(ranks=16, steps=2, load_skew_us=300.0)


def generated(tmp: Path, plan: JobPlan) -> list[RankCollectives]:
    return [collectives_of_file(path) for path in write_job(tmp, plan)]


@pytest.fixture(scope="module")
def slow_job(tmp_path_factory: pytest.TempPathFactory) -> list[RankCollectives]:
    return generated(tmp_path_factory.mktemp("slow"), SLOW)


def test_the_planted_straggler_is_named_and_the_others_wait_the_planted_delay(slow_job):
    job = match_collectives(slow_job)
    n = SLOW.steps * SLOW.collectives
    assert len(job.collectives) == n and set(job.collectives["ranks"]) == {16}
    assert set(job.collectives["matched_by"]) == {"seq"}
    summary = straggler_summary(job)
    worst = straggler(summary)
    assert worst.rank == 11 and worst.times_last == n and worst.pct_last == 100.0
    planted = n * SLOW.slow_us
    assert summary[0].rank == 11 and worst.total_wait_us < 0.1 * planted
    assert worst.held_others_us == pytest.approx(planted, rel=0.1)  # what it cost the job
    for rank in summary[1:]:
        assert rank.total_wait_us == pytest.approx(planted, rel=0.1)
        assert rank.held_others_us == 0
        assert rank.mean_wait_us == pytest.approx(SLOW.slow_us, rel=0.1)
    assert job.collectives["start_skew"].to_numpy() == pytest.approx(SLOW.slow_us, rel=0.1)
    assert job.collectives["comm_latency"].to_numpy() == pytest.approx(SLOW.transfer_us)
    assert job.collectives["end_skew"].max() < 0.01


def test_the_generated_traces_read_as_kineto_writes_them(slow_job, tmp_path: Path):
    first = slow_job[3].records().__next__()
    assert (first.process_group, first.seq, first.name) == ("0", 1, "allreduce")
    assert (first.group_size, first.dtype, first.in_nelems) == (16, "Float", 1 << 18)
    assert first.group_ranks == "[" + ",".join(map(str, range(16))) + "]"
    path = write_job(tmp_path, JobPlan(ranks=2, steps=1))[1]
    model = build_model(load_trace(path))
    assert model.gpu["linked"].all()  # every kernel has its launch: the timeline counts it
    mm = model.events[(model.events["name"] == "aten::mm").to_numpy()]
    assert len(mm) == 4 and set(mm["input_dims"].astype(str)) == {"[[2048,4096],[4096,4096]]"}
    assert rank_collectives(model).rank == 1 and rank_collectives(model, 5).rank == 5
    assert rank_collectives(model.trace).table.equals(rank_collectives(model).table)


def test_a_64_rank_job_names_its_straggler(tmp_path: Path):
    plan = JobPlan(ranks=64, steps=1, collectives=3, slow_rank=40, slow_us=120.0)
    summary = straggler_summary(match_collectives(generated(tmp_path, plan)))
    assert straggler(summary).rank == 40 and straggler(summary).times_last == 3
    others = [r.total_wait_us for r in summary if r.rank != 40]
    assert len(others) == 63 and others == pytest.approx([3 * 120.0] * 63, rel=0.1)


def test_skewed_data_loading_makes_the_slowest_loader_last_at_each_step_s_first(tmp_path):
    job = match_collectives(generated(tmp_path, SKEWED))
    coll = job.collectives
    firsts = coll.iloc[:: SKEWED.collectives]
    assert list(firsts["last_rank"]) == [15] * SKEWED.steps
    assert firsts["start_skew"].to_numpy() == pytest.approx(300.0, rel=0.1)
    rest = coll.drop(firsts.index)
    assert rest["start_skew"].max() <= SKEWED.jitter_us  # only the jitter after the first
    summary = {r.rank: r for r in straggler_summary(job)}
    assert summary[0].total_wait_us == pytest.approx(SKEWED.steps * 300.0, rel=0.1)
    assert longest_waiter(list(summary.values())).rank == 0


def test_without_sequence_numbers_collectives_match_by_order(slow_job):
    unnumbered = [RankCollectives(r.rank, r.table.assign(seq=-1)) for r in slow_job]
    by_order = match_collectives(unnumbered).collectives
    by_seq = match_collectives(slow_job).collectives
    assert set(by_order["matched_by"]) == {"order"}
    pd.testing.assert_series_equal(by_order["start_skew"], by_seq["start_skew"])


def test_a_collective_missing_from_one_rank_shifts_order_but_not_sequence(slow_job):
    dropped = [
        RankCollectives(r.rank, r.table.iloc[1:] if r.rank == 3 else r.table) for r in slow_job
    ]
    coll = match_collectives(dropped).collectives
    assert list(coll["ranks"][:2]) == [15, 16]  # rank 3 is absent from the first only
    assert coll["start_skew"].to_numpy() == pytest.approx(SLOW.slow_us, rel=0.1)


def test_a_rank_given_twice_is_refused(slow_job):
    with pytest.raises(DuplicateRanks, match=r"\[3\]"):
        match_collectives([*slow_job, slow_job[3]])


def test_a_rank_s_table_travels_and_the_job_is_reproducible(slow_job, tmp_path: Path):
    back = pickle.loads(pickle.dumps(slow_job[4]))  # what a per-rank task hands back
    assert back.rank == 4 and list(back.records()) == list(slow_job[4].records())
    plan = JobPlan(ranks=2, steps=1, slow_rank=0, slow_us=50.0)
    first = [p.read_bytes() for p in write_job(tmp_path / "a", plan)]
    assert first == [p.read_bytes() for p in write_job(tmp_path / "b", plan)]
    assert first != [p.read_bytes() for p in write_job(tmp_path / "c", JobPlan(ranks=2, steps=1))]


def test_uneven_compute_spreads_the_waits_along_the_ranks(tmp_path: Path):
    plan = JobPlan(ranks=8, steps=1, collectives=4, compute_skew_us=70.0)
    summary = {r.rank: r for r in straggler_summary(match_collectives(generated(tmp_path, plan)))}
    assert summary[7].times_last == 4 and summary[7].total_wait_us < 4 * plan.jitter_us
    for rank in range(7):  # rank r computes 70 * r / 7 µs more than rank 0 before each one
        planted = 4 * 70.0 * (7 - rank) / 7
        assert summary[rank].total_wait_us == pytest.approx(planted, rel=0.1, abs=4.0)


@pytest.mark.parametrize(
    ("args", "seq", "group", "name", "matched_by"),
    [(False, False, "all", "", "order"), (True, False, "0", "allreduce", "order")],
)
def test_older_traces_without_seq_or_any_args(tmp_path, args, seq, group, name, matched_by):
    plan = JobPlan(ranks=4, steps=2, slow_rank=2, slow_us=90.0, record_args=args, record_seq=seq)
    ranks = generated(tmp_path, plan)
    first = next(ranks[0].records())
    assert (first.process_group, first.name, first.seq) == (group, name, -1)
    assert first.kind == "allreduce"  # recorded, or read from the kernel's name
    job = match_collectives(ranks)
    assert set(job.collectives["matched_by"]) == {matched_by} and len(job.collectives) == 8
    assert straggler(straggler_summary(job)).rank == 2
    assert job.collectives["start_skew"].to_numpy() == pytest.approx(90.0, rel=0.1)


def test_tracelens_shaped_tables_carry_the_recorded_args(slow_job):
    job = match_collectives(slow_job)
    table = implicit_sync_table(job)
    first = table.iloc[0]
    assert (first["Process Group Name"], first["Collective name"], first["dtype"]) == (
        "0",
        "allreduce",
        "Float",
    )
    assert (first["Group size"], first["In msg nelems"]) == (16, 1 << 18)
    waits = [first[f"rank_{r}_wait_time"] for r in range(16)]
    assert waits[11] == 0 and first["skew in start time"] == max(waits)
    assert len(table) == 12 and table.columns[-1] == "rank_15_wait_time"
    stragglers = straggler_table(straggler_summary(job))
    assert stragglers.iloc[0]["rank"] == 11 and stragglers.iloc[0]["pct_arrived_last"] == 100


def test_collectives_without_c10d_fields_are_named_and_sized_from_their_operator(tmp_path):
    """Older PyTorch writes NCCL kernels with no c10d args: the kind comes from the kernel's
    name (the trace alone) or the launching `c10d::allreduce_` (with the model), the size and
    dtype from that operator's recorded input, so the bandwidth can be given."""
    from rooflens.analyzers.job.collectives import rank_collectives
    from rooflens.analyzers.report.loading import read_trace

    plan = JobPlan(ranks=2, steps=1, collectives=2, record_args=False)
    paths = write_job(tmp_path, plan)
    alone = next(collectives_of_file(paths[0]).records())
    assert (alone.name, alone.kind, alone.msg_nelems, alone.msg_dtype) == ("", "allreduce", -1, "")
    model, _ = read_trace(paths[0])
    first = next(rank_collectives(model).records())
    assert (first.name, first.in_nelems, first.dtype) == ("", -1, "")  # as recorded
    assert (first.kind, first.msg_nelems, first.msg_dtype) == (
        "allreduce",
        plan.message()[0],
        "Float",
    )


def test_a_job_on_an_unknown_gpu_says_no_platform_is_known(tmp_path):
    """No rank's GPU is in the catalogue: the job analysis warns once, naming the GPU and
    how to pass a platform, as a single run does."""
    import gzip
    import json

    from rooflens.analyzers.job.analysis import job_analysis
    from rooflens.analyzers.job.summary import summarise_rank

    paths = write_job(tmp_path, JobPlan(ranks=2, steps=1, collectives=1))
    for path in paths:
        document = json.loads(gzip.decompress(path.read_bytes()))
        for device in document["deviceProperties"]:  # no name or shape in the catalogue
            device.update(name="Prototype Accelerator X1", computeMajor=5, numSms=7)
        path.write_bytes(gzip.compress(json.dumps(document).encode()))
    analysis = job_analysis(summarise_rank(p) for p in paths)
    (warning,) = analysis.warnings
    assert "no platform is known for the job's GPU" in warning and "--platform" in warning
    known = job_analysis(
        summarise_rank(p)
        for p in write_job(tmp_path / "h100", JobPlan(ranks=2, steps=1, collectives=1))
    )
    assert known.warnings == ()
