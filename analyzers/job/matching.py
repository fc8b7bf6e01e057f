"""Collectives matched across ranks, and how long each rank waited at each of them.

A synchronising collective cannot finish on any rank before every rank of its group has
arrived, so the gap between a rank's arrival and the last arrival is time that rank spent
waiting for the others. Definitions: docs/multirank.md#matching-collectives-across-ranks.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .collectives import RankCollectives

# collective-name families every rank of the group must reach before any finishes
SYNC_FAMILIES = ("allreduce", "reducescatter", "allgather")
SYNC_EXACT = ("alltoall",)

COLLECTIVE_COLUMNS = (
    "collective_id",
    "process_group",
    "key",
    "matched_by",
    "name",
    "ranks",
    "group_size",
    "group_ranks",
    "dtype",
    "in_nelems",
    "out_nelems",
    "kind",
    "msg_nelems",
    "msg_dtype",
    "first_arrival",
    "last_arrival",
    "earliest_rank",
    "last_rank",
    "start_skew",
    "end_skew",
    "comm_latency",
    "avg_wait",
    "last_margin",
)


def synchronising(name: str) -> bool:
    """Whether a collective of this name holds every rank until the last one arrives.

    An unrecorded name counts as synchronising (older traces name no collective at all);
    point-to-point, broadcast, reduce and all_to_allv do not (docs/multirank.md).
    """
    if not name:
        return True
    key = name.lower().replace("_", "")
    return key in SYNC_EXACT or any(family in key for family in SYNC_FAMILIES)


@dataclass(frozen=True)
class JobCollectives:
    """The matched collectives of a job (times in µs).

    `collectives`: one row per collective matched across ranks (COLLECTIVE_COLUMNS).
    `arrivals`: one row per (collective, rank): `collective_id`, `rank`, `ts`, `dur`, `wait`.
    `durations`: per rank, the summed duration of all its collective kernels.
    `left_out`: per-rank kernels of collectives that do not synchronise (not matched).
    """

    collectives: pd.DataFrame
    arrivals: pd.DataFrame
    durations: dict[int, float]
    left_out: int


class DuplicateRanks(ValueError):
    """Two tables claim the same rank: their waits would be measured against each other."""


def match_collectives(ranks: Iterable[RankCollectives]) -> JobCollectives:
    """Match each rank's synchronising collectives by (process group, sequence or order)."""
    ranks = list(ranks)
    seen = [r.rank for r in ranks]
    if twice := sorted({r for r in seen if seen.count(r) > 1}):
        raise DuplicateRanks(f"rank(s) {twice} appear more than once in the job")
    long = _long_table(ranks)
    sync = long[long["name"].map(synchronising).to_numpy(bool)].copy()
    sync["key"], sync["matched_by"] = match_keys(sync)
    durations = {r.rank: r.total_dur for r in ranks}
    if sync.empty:
        empty = pd.DataFrame(columns=list(COLLECTIVE_COLUMNS))
        arrivals = pd.DataFrame(columns=["collective_id", "rank", "ts", "dur", "wait"])
        return JobCollectives(empty, arrivals, durations, len(long))
    return _statistics(sync, durations, left_out=len(long) - len(sync))


def _long_table(ranks: list[RankCollectives]) -> pd.DataFrame:
    tables = [r.table.assign(rank=r.rank) for r in ranks if len(r)]
    if not tables:
        columns = [*(ranks[0].table.columns if ranks else []), "rank"]
        return pd.DataFrame(columns=columns).astype({"name": object})
    return pd.concat(tables, ignore_index=True)


def match_keys(sync: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the key it is matched on within its group: the recorded sequence number when
    every kernel of the group has one, else its order among its rank's kernels of the group."""
    key = sync["index"].to_numpy(np.int64).copy()
    how = np.full(len(sync), "order", dtype=object)
    seq = sync["seq"].to_numpy(np.int64)
    for _, rows in sync.groupby("process_group", sort=False).indices.items():
        if len(rows) and (seq[rows] >= 0).all():
            key[rows], how[rows] = seq[rows], "seq"
    return key, how


def _one_arrival_per_rank(sync: pd.DataFrame) -> pd.DataFrame:
    """A rank with several kernels under one key (one collective split over kernels) arrives
    with its first and leaves with its last."""
    sync = sync.assign(end=sync["ts"] + sync["dur"])
    keys = ["process_group", "key", "rank"]
    if not sync.duplicated(keys).any():
        return sync
    first = sync.sort_values("ts", kind="stable").drop_duplicates(keys).set_index(keys)
    first["end"] = sync.groupby(keys)["end"].max()
    first["dur"] = first["end"] - first["ts"]
    return first.reset_index()


def _second_latest(sync: pd.DataFrame) -> pd.Series:
    """Per collective, the second-latest arrival (absent when one rank took part)."""
    order = sync.groupby(["process_group", "key"])["ts"].rank(method="first", ascending=False)
    return sync[order.to_numpy() == 2].groupby(["process_group", "key"])["ts"].max()


def _statistics(sync: pd.DataFrame, durations: dict[int, float], left_out: int) -> JobCollectives:
    """Skews, latency and waits per matched collective (see the module docstring)."""
    sync = _one_arrival_per_rank(sync)
    by = sync.groupby(["process_group", "key"], sort=False)
    last = by["ts"].transform("max")
    first = by["ts"].transform("min")
    sync = sync.assign(wait=last - sync["ts"], last=last, first=first)
    stats = by.agg(
        matched_by=("matched_by", "first"),
        name=("name", "first"),
        ranks=("rank", "size"),
        group_size=("group_size", "max"),
        group_ranks=("group_ranks", "first"),
        dtype=("dtype", "first"),
        in_nelems=("in_nelems", "first"),
        out_nelems=("out_nelems", "first"),
        kind=("kind", "first"),
        msg_nelems=("msg_nelems", "first"),
        msg_dtype=("msg_dtype", "first"),
        first_arrival=("ts", "min"),
        last_arrival=("ts", "max"),
        end_first=("end", "min"),
        end_last=("end", "max"),
        comm_latency=("dur", "min"),
    )
    waits = sync.groupby(["process_group", "key"], sort=False)["wait"].mean()
    stats["avg_wait"] = waits
    on_first = sync[sync["ts"] == sync["first"]]
    on_last = sync[sync["ts"] == sync["last"]]
    # ties: the highest rank counts as first and the lowest as last (TraceLens's order)
    stats["earliest_rank"] = on_first.groupby(["process_group", "key"])["rank"].max()
    stats["last_rank"] = on_last.groupby(["process_group", "key"])["rank"].min()
    stats["start_skew"] = stats["last_arrival"] - stats["first_arrival"]
    stats["last_margin"] = stats["last_arrival"] - _second_latest(sync).reindex(stats.index)
    stats["last_margin"] = stats["last_margin"].fillna(0.0)
    stats["end_skew"] = stats["end_last"] - stats["end_first"]
    stats = stats.reset_index().sort_values(["first_arrival", "process_group", "key"])
    stats.insert(0, "collective_id", np.arange(len(stats), dtype=np.int64))
    ids = stats.set_index(["process_group", "key"])["collective_id"]
    sync = sync.join(ids, on=["process_group", "key"])
    arrivals = sync[["collective_id", "rank", "ts", "dur", "wait"]].sort_values(
        ["collective_id", "rank"], ignore_index=True
    )
    collectives = stats[list(COLLECTIVE_COLUMNS)].reset_index(drop=True)
    return JobCollectives(collectives, arrivals, durations, left_out)
