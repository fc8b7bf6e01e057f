"""The matched collectives and the straggler summary as TraceLens's multi-rank report lays
them out (its file and column names), so what reads that report can read ours.

Columns: docs/multirank.md#tracelens-shaped-tables.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .matching import JobCollectives
from .stragglers import RankWaits

IMPLICIT_SYNC = "nccl_implicit_sync"
STRAGGLERS = "straggler_summary"

_RENAMED = {
    "process_group": "Process Group Name",
    "group_ranks": "Process Group Ranks",
    "name": "Collective name",
    "group_size": "Group size",
    "dtype": "dtype",
    "in_nelems": "In msg nelems",
    "out_nelems": "Out msg nelems",
    "comm_latency": "comm_latency",
    "start_skew": "skew in start time",
    "earliest_rank": "earliest arrival rank",
    "avg_wait": "avg_wait_time",
    "end_skew": "skew in end time",
}


def implicit_sync_table(job: JobCollectives) -> pd.DataFrame:
    """One row per matched collective: its args, statistics, then each rank's ts, dur and
    wait. Args the trace did not record are empty, never guessed."""
    coll = job.collectives
    table = coll[["collective_id", *_RENAMED]].rename(columns=_RENAMED)
    table = table.replace({"": None}).astype(object)
    for column in ("Group size", "In msg nelems", "Out msg nelems"):
        table[column] = [None if v is None or v < 0 else int(v) for v in table[column]]
    wide = job.arrivals.pivot(index="collective_id", columns="rank", values=["ts", "dur"])
    waits = job.arrivals.pivot(index="collective_id", columns="rank", values="wait")
    per_rank = {}
    for rank in sorted(job.arrivals["rank"].unique()):
        per_rank[f"rank_{rank}_ts"] = wide[("ts", rank)]
        per_rank[f"rank_{rank}_dur"] = wide[("dur", rank)]
    for rank in sorted(job.arrivals["rank"].unique()):
        per_rank[f"rank_{rank}_wait_time"] = waits[rank]
    ranks = pd.DataFrame(per_rank).reindex(coll["collective_id"].to_numpy())
    return pd.concat([table.reset_index(drop=True), ranks.reset_index(drop=True)], axis=1)


def straggler_table(summary: list[RankWaits]) -> pd.DataFrame:
    """The straggler summary rows, least total wait first, with TraceLens's column names."""
    rows = [
        {
            "rank": r.rank,
            "total_wait_time_us": r.total_wait_us,
            "mean_wait_time_us": r.mean_wait_us,
            "times_arrived_last": r.times_last,
            "times_arrived_first": r.times_first,
            "pct_arrived_last": r.pct_last,
            "num_collectives": r.collectives,
            "total_nccl_dur_us": r.total_collective_us,
        }
        for r in summary
    ]
    columns = [
        "rank",
        "total_wait_time_us",
        "mean_wait_time_us",
        "times_arrived_last",
        "times_arrived_first",
        "pct_arrived_last",
        "num_collectives",
        "total_nccl_dur_us",
    ]
    return pd.DataFrame(rows, columns=columns).astype({"rank": np.int64})
