"""Cross-rank matching and the straggler summary on hand-built rank tables whose numbers are
computed by hand (docs/multirank.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.job.collectives import (
    COLUMNS,
    NoRank,
    RankCollectives,
    rank_collectives,
    ranks_text,
)
from rooflens.analyzers.job.matching import match_collectives, synchronising
from rooflens.analyzers.job.stragglers import straggler, straggler_summary
from rooflens.analyzers.synthetic.host import write_host_bound_trace
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model


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
    frame["kind"] = frame["name"]  # as recorded
    frame["msg_nelems"] = frame[["in_nelems", "out_nelems"]].max(axis=1)
    frame["msg_dtype"] = frame["dtype"]
    return frame[list(COLUMNS)]


def ranks_at(*times: list[tuple[float, float]], **fields) -> list[RankCollectives]:
    """Rank r runs the collectives times[r] = [(ts, dur), ...]."""
    return [
        RankCollectives(r, table([{"ts": ts, "dur": dur, **fields} for ts, dur in spans]))
        for r, spans in enumerate(times)
    ]


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


def test_group_ranks_read_the_same_as_a_list_or_as_its_text():
    column = pd.Series(["[0, 1, 2]", '"[0, 1, 2]"', None, "not json", '"text"'])
    assert list(ranks_text(column)) == ["[0,1,2]", "[0,1,2]", "", "", ""]


def test_a_collective_split_over_kernels_is_one_arrival():
    # rank 0 runs the collective (seq 1) as two kernels: [0, 4] and [6, 12]; rank 1 at [3, 12]
    rank0 = table([{"ts": 0, "dur": 4, "seq": 1}, {"ts": 6, "dur": 6, "seq": 1}])
    rank1 = table([{"ts": 3, "dur": 9, "seq": 1}])
    job = match_collectives([RankCollectives(0, rank0), RankCollectives(1, rank1)])
    assert list(job.arrivals["wait"]) == [3, 0] and list(job.arrivals["dur"]) == [12, 9]
    assert job.collectives.iloc[0][["start_skew", "end_skew", "ranks"]].tolist() == [3, 0, 2]
