"""Cross-rank matching and the straggler summary on generated jobs whose waits were planted
(analyzers/trace/synthetic_job.py), and on hand-built tables whose numbers are computed by
hand (docs/multirank.md)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.job.collectives import (
    COLUMNS,
    NoRank,
    RankCollectives,
    collectives_of_file,
    rank_collectives,
)
from rooflens.analyzers.job.matching import DuplicateRanks, match_collectives, synchronising
from rooflens.analyzers.job.stragglers import longest_waiter, straggler, straggler_summary
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.synthetic_job import JobPlan, write_job

SLOW = JobPlan(ranks=16, slow_rank=11, slow_us=250.0)
SKEWED = JobPlan(ranks=16, steps=2, load_skew_us=300.0)


def generated(tmp: Path, plan: JobPlan) -> list[RankCollectives]:
    return [collectives_of_file(path) for path in write_job(tmp, plan)]


@pytest.fixture(scope="module")
def slow_job(tmp_path_factory: pytest.TempPathFactory) -> list[RankCollectives]:
    return generated(tmp_path_factory.mktemp("slow"), SLOW)


def table(rows: list[dict]) -> pd.DataFrame:
    """A rank table from a few fields; the rest take their missing values."""
    blank = {
        "process_group": "all",
        "seq": -1,
        "name": "",
        "kernel": "ncclKernel",
        "stream": 1,
        "group_size": -1,
        "group_ranks": "",
        "dtype": "",
        "in_nelems": -1,
        "out_nelems": -1,
    }
    frame = pd.DataFrame([{**blank, **row} for row in rows])
    frame["index"] = frame.groupby("process_group").cumcount()
    return frame[list(COLUMNS)]


def ranks_at(*times: list[tuple[float, float]], **fields) -> list[RankCollectives]:
    """Rank r runs the collectives times[r] = [(ts, dur), ...]."""
    return [
        RankCollectives(r, table([{"ts": ts, "dur": dur, **fields} for ts, dur in spans]))
        for r, spans in enumerate(times)
    ]


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
    assert (first.group_size, first.dtype, first.in_nelems) == (16, "Float", 1 << 20)
    assert first.group_ranks == "[" + ",".join(map(str, range(16))) + "]"
    path = write_job(tmp_path, JobPlan(ranks=2, steps=1))[1]
    model = build_model(load_trace(path))
    assert model.gpu["linked"].all()  # every kernel has its launch: the timeline counts it
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


def test_statistics_by_hand():
    # rank 0 arrives at 10 (last), rank 1 at 0 (first), rank 2 at 5; all end at 15
    job = match_collectives(ranks_at([(10, 5)], [(0, 15)], [(5, 10)]))
    row = job.collectives.iloc[0]
    assert (row["start_skew"], row["end_skew"], row["comm_latency"]) == (10, 0, 5)
    assert (row["earliest_rank"], row["last_rank"], row["avg_wait"]) == (1, 0, 5)
    assert row["last_margin"] == 5  # rank 0 at 10, the next-latest (rank 2) at 5
    assert list(job.arrivals["wait"]) == [0, 10, 5]
    assert [r.rank for r in straggler_summary(job)] == [0, 2, 1]


def test_ties_count_the_highest_rank_first_and_the_lowest_last():
    job = match_collectives(ranks_at([(0, 9)], [(0, 9)], [(4, 5)], [(4, 5)]))
    row = job.collectives.iloc[0]
    assert (row["earliest_rank"], row["last_rank"]) == (1, 2)


def test_only_synchronising_collectives_are_matched():
    assert all(
        map(
            synchronising,
            [
                "",
                "allreduce",
                "_allgather_base",
                "all_to_all",
                "reduce_scatter_tensor_coalesced",
                "allreduce_coalesced",
            ],
        )
    )
    assert not any(map(synchronising, ["send", "recv", "broadcast", "all_to_allv", "reduce"]))
    job = match_collectives(ranks_at([(0, 5), (10, 2)], [(3, 2), (20, 2)], name="send"))
    assert job.collectives.empty and job.left_out == 4
    assert job.durations == {0: 7.0, 1: 4.0} and straggler(straggler_summary(job)) is None


def test_groups_are_matched_separately():
    rank0 = table(
        [{"ts": 0, "dur": 9, "process_group": "a"}, {"ts": 1, "dur": 3, "process_group": "b"}]
    )
    rank1 = table(
        [{"ts": 2, "dur": 1, "process_group": "b"}, {"ts": 4, "dur": 5, "process_group": "a"}]
    )
    coll = match_collectives([RankCollectives(0, rank0), RankCollectives(1, rank1)]).collectives
    skews = dict(zip(coll["process_group"], coll["start_skew"], strict=True))
    assert skews == {"a": 4, "b": 1}


def test_a_trace_without_a_rank_needs_one(tmp_path: Path):
    from rooflens.analyzers.trace.synthetic_host import write_host_bound_trace

    model = build_model(load_trace(write_host_bound_trace(tmp_path / "one.json.gz")))
    with pytest.raises(NoRank):
        rank_collectives(model)
    assert len(rank_collectives(model, 0)) == 0


def test_a_rank_is_counted_against_its_own_collectives():
    # group a: ranks 0, 1 (rank 1 last); group b: ranks 0, 1, 2 (rank 2 last)
    rank0 = table(
        [{"ts": 0, "dur": 9, "process_group": "a"}, {"ts": 10, "dur": 12, "process_group": "b"}]
    )
    rank1 = table(
        [{"ts": 5, "dur": 4, "process_group": "a"}, {"ts": 11, "dur": 11, "process_group": "b"}]
    )
    rank2 = table([{"ts": 20, "dur": 2, "process_group": "b"}])
    ranks = [RankCollectives(0, rank0), RankCollectives(1, rank1), RankCollectives(2, rank2)]
    summary = {r.rank: r for r in straggler_summary(match_collectives(ranks))}
    assert (summary[2].collectives, summary[2].times_last, summary[2].pct_last) == (1, 1, 100.0)
    assert (summary[1].collectives, summary[1].times_last, summary[1].pct_last) == (2, 1, 50.0)
    assert (summary[0].total_wait_us, summary[1].total_wait_us) == (15, 9)


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


def test_group_ranks_read_the_same_as_a_list_or_as_its_text():
    from rooflens.analyzers.job.collectives import ranks_text

    column = pd.Series(["[0, 1, 2]", '"[0, 1, 2]"', None, "not json", '"text"'])
    assert list(ranks_text(column)) == ["[0,1,2]", "[0,1,2]", "", "", ""]


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
    job = match_collectives(ranks)
    assert set(job.collectives["matched_by"]) == {matched_by} and len(job.collectives) == 8
    assert straggler(straggler_summary(job)).rank == 2
    assert job.collectives["start_skew"].to_numpy() == pytest.approx(90.0, rel=0.1)


def test_a_collective_split_over_kernels_is_one_arrival():
    # rank 0 runs the collective (seq 1) as two kernels: [0, 4] and [6, 12]; rank 1 at [3, 12]
    rank0 = table([{"ts": 0, "dur": 4, "seq": 1}, {"ts": 6, "dur": 6, "seq": 1}])
    rank1 = table([{"ts": 3, "dur": 9, "seq": 1}])
    job = match_collectives([RankCollectives(0, rank0), RankCollectives(1, rank1)])
    assert list(job.arrivals["wait"]) == [3, 0] and list(job.arrivals["dur"]) == [12, 9]
    assert job.collectives.iloc[0][["start_skew", "end_skew", "ranks"]].tolist() == [3, 0, 2]


def test_tracelens_shaped_tables_carry_the_recorded_args(slow_job):
    from rooflens.analyzers.job.tables import implicit_sync_table, straggler_table

    job = match_collectives(slow_job)
    table = implicit_sync_table(job)
    first = table.iloc[0]
    assert (first["Process Group Name"], first["Collective name"], first["dtype"]) == (
        "0",
        "allreduce",
        "Float",
    )
    assert (first["Group size"], first["In msg nelems"]) == (16, 1 << 20)
    waits = [first[f"rank_{r}_wait_time"] for r in range(16)]
    assert waits[11] == 0 and first["skew in start time"] == max(waits)
    assert len(table) == 12 and table.columns[-1] == "rank_15_wait_time"
    stragglers = straggler_table(straggler_summary(job))
    assert stragglers.iloc[0]["rank"] == 11 and stragglers.iloc[0]["pct_arrived_last"] == 100
