"""Cross-rank collectives and the straggler summary of the 8-rank DLRM job against TraceLens's
multi-rank collective report (docs/multirank.md): every rank's collectives, every matched
collective's skews, latency and waits within 1 µs, arrival counts exact."""

from __future__ import annotations

import csv
import re
from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.job.collectives import RankCollectives, collectives_of_file
from rooflens.analyzers.job.matching import JobCollectives, match_collectives
from rooflens.analyzers.job.stragglers import longest_waiter, straggler, straggler_summary
from rooflens.analyzers.job.tables import (
    IMPLICIT_SYNC,
    STRAGGLERS,
    implicit_sync_table,
    straggler_table,
)

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

JOB = "traces/multirank/dlrm_8rank"
REFERENCE = "reference/tracelens_multirank/dlrm_8rank"
RANKS = range(8)
US = 1.0  # tolerance on every time, in µs


@cache
def ranks(shared: Path) -> tuple[RankCollectives, ...]:
    files = sorted((shared / JOB).glob("worker*.json.gz"))
    found = tuple(collectives_of_file(f) for f in files)
    # the rank each trace records agrees with its file name (worker<r>_...)
    names = [int(re.match(r"worker(\d+)_", f.name).group(1)) for f in files]
    assert [r.rank for r in found] == names == list(RANKS)
    return found


@cache
def job(shared: Path) -> JobCollectives:
    return match_collectives(ranks(shared))


def reference(shared: Path, name: str) -> list[dict[str, str]]:
    with (shared / REFERENCE / f"{name}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def test_each_rank_s_collectives_match_the_long_table(shared: Path) -> None:
    ref = {(int(r["rank"]), int(r["index_in_group"])): r for r in reference(shared, "nccl_long")}
    ours = {(c.rank, c.index): c for rank in ranks(shared) for c in rank.records()}
    assert set(ours) == set(ref) and len(ours) == 64
    for key, row in ref.items():
        mine = ours[key]
        assert mine.process_group == row["Process Group Name"] == "all"
        assert mine.stream == int(row["stream"])
        assert mine.ts == pytest.approx(float(row["ts"]), abs=US)
        assert mine.dur == pytest.approx(float(row["dur"]), abs=US)
        assert mine.seq == -1 and mine.name == ""  # the traces record neither


def test_matched_collectives_match_the_implicit_sync_table(shared: Path) -> None:
    rows = reference(shared, "nccl_implicit_sync")
    coll = job(shared).collectives.set_index("key")
    arrivals = job(shared).arrivals
    assert len(coll) == len(rows) == 8
    assert set(coll["matched_by"]) == {"order"}
    for row in rows:
        mine = coll.loc[int(row["collective_id"])]
        assert mine["process_group"] == row["Process Group Name"]
        assert int(mine["earliest_rank"]) == int(row["earliest arrival rank"])
        for ours, theirs in (
            ("comm_latency", "comm_latency"),
            ("start_skew", "skew in start time"),
            ("end_skew", "skew in end time"),
            ("avg_wait", "avg_wait_time"),
        ):
            assert mine[ours] == pytest.approx(float(row[theirs]), abs=US), theirs
        at = arrivals[arrivals["collective_id"] == mine["collective_id"]].set_index("rank")
        for r in RANKS:
            assert at.loc[r, "ts"] == pytest.approx(float(row[f"rank_{r}_ts"]), abs=US)
            assert at.loc[r, "dur"] == pytest.approx(float(row[f"rank_{r}_dur"]), abs=US)
            assert at.loc[r, "wait"] == pytest.approx(float(row[f"rank_{r}_wait_time"]), abs=US)


def test_straggler_summary_matches(shared: Path) -> None:
    ref = reference(shared, "straggler_summary")
    ours = straggler_summary(job(shared))
    assert [r.rank for r in ours] == [int(row["rank"]) for row in ref]  # least wait first
    for mine, row in zip(ours, ref, strict=True):
        assert mine.total_wait_us == pytest.approx(float(row["total_wait_time_us"]), abs=US)
        assert mine.mean_wait_us == pytest.approx(
            float(row["mean_wait_time_us"]), abs=0.051
        )  # the reference rounds to 0.1
        assert mine.times_last == int(row["times_arrived_last"])
        assert mine.times_first == int(row["times_arrived_first"])
        assert mine.pct_last == pytest.approx(
            float(row["pct_arrived_last"]), abs=0.051
        )  # the reference rounds to 0.1
        assert mine.collectives == int(row["num_collectives"])
        assert mine.total_collective_us == pytest.approx(float(row["total_nccl_dur_us"]), abs=US)


def test_the_straggler_and_the_longest_waiter_are_the_reference_s(shared: Path) -> None:
    ref = reference(shared, "straggler_summary")
    most_last = max(ref, key=lambda row: int(row["times_arrived_last"]))
    most_wait = max(ref, key=lambda row: float(row["total_wait_time_us"]))
    summary = straggler_summary(job(shared))
    assert straggler(summary).rank == int(most_last["rank"]) == 7
    assert straggler(summary).pct_last == 62.5
    assert longest_waiter(summary).rank == int(most_wait["rank"]) == 1


def test_recorded_collective_args_are_read(shared: Path) -> None:
    """Single-rank traces that record the c10d args on their NCCL kernels."""
    b200 = collectives_of_file(shared / "traces/b200/eager_trace.json.gz", 0).table
    gather = b200[b200["name"] == "_allgather_base"]
    assert len(b200) == 74 and len(gather) == 1
    assert gather.iloc[0][["process_group", "dtype", "group_size", "group_ranks"]].tolist() == [
        "3",
        "BFloat16",
        8,
        "[0,1,2,3,4,5,6,7]",  # recorded as the text of a list
    ]
    resnet = collectives_of_file(shared / "traces/mi300/resnet_act_checkpoint.json.gz", 0)
    names = resnet.table["name"].value_counts().to_dict()
    assert names == {"allreduce": 6, "broadcast": 6, "": 5}
    job = match_collectives([resnet])
    assert job.left_out == 6 and len(job.collectives) == 11  # broadcasts are not matched


def same_cell(ours: object, theirs: str, tolerance: float) -> bool:
    """A reference cell (CSV text) and ours: both empty, equal text, or numbers within."""
    if ours is None or (isinstance(ours, float) and ours != ours):
        return theirs == ""
    try:
        return abs(float(ours) - float(theirs)) <= tolerance
    except ValueError:
        return str(ours) == theirs


@pytest.mark.parametrize("name", [IMPLICIT_SYNC, STRAGGLERS])
def test_tracelens_shaped_tables_equal_the_reference_files(shared: Path, name: str) -> None:
    summary = straggler_summary(job(shared))
    ours = implicit_sync_table(job(shared)) if name == IMPLICIT_SYNC else straggler_table(summary)
    ref = reference(shared, name)
    shared_columns = [c for c in ref[0] if c in ours.columns]
    missing = set(ref[0]) - set(shared_columns)
    # bandwidth needs recorded sizes (none here); node placement is not modelled yet
    assert missing <= {
        "In msg size (MB)",
        "Out msg size (MB)",
        "Full msg size (MB)",
        "algo bw (GB/s)",
        "bus bw (GB/s)",
        "node_span",
        "node_id",
    }
    assert len(ours) == len(ref)
    rounded = {"mean_wait_time_us": 0.051}  # the reference rounds to 0.1
    for mine, row in zip(ours.to_dict("records"), ref, strict=True):
        wrong = {
            c: (mine[c], row[c])
            for c in shared_columns
            if not same_cell(mine[c], row[c], rounded.get(c, US))
        }
        assert not wrong, f"(ours, TraceLens): {wrong}"


def test_the_time_each_last_rank_held_the_others(shared: Path) -> None:
    """held_others_us, derived here from the reference's own per-rank start times: at each
    collective, the last arrival minus the second-latest, summed over the collectives a rank
    arrived last at."""
    held = dict.fromkeys(RANKS, 0.0)
    for row in reference(shared, "nccl_implicit_sync"):
        starts = sorted((float(row[f"rank_{r}_ts"]), -r) for r in RANKS)
        (second, _), (last, minus_rank) = starts[-2], starts[-1]
        held[-minus_rank] += last - second
    ours = {r.rank: r.held_others_us for r in straggler_summary(job(shared))}
    assert ours == pytest.approx(held, abs=US)
    assert ours[7] == pytest.approx(1309.0, abs=US)  # 505 + 509 + 162 + 124 + 9
