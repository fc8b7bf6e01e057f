"""One rank's collectives: every NCCL/RCCL kernel of its trace with its process group and its
place in that group, as a small columnar table a worker can return for cross-rank matching.

Definitions: docs/multirank.md#per-rank-collectives.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..trace.load import Trace, load_trace
from ..trace.model import TraceModel
from ..trace.timeline import classify_events

DEFAULT_GROUP = "all"  # the group of collectives whose trace names none
COLUMNS = (
    "process_group",
    "index",
    "seq",
    "name",
    "kernel",
    "stream",
    "ts",
    "dur",
    "group_size",
    "group_ranks",
    "dtype",
    "in_nelems",
    "out_nelems",
)


class NoRank(ValueError):
    """The trace does not say which rank wrote it and none was given."""


@dataclass(frozen=True, slots=True)
class Collective:
    """One collective kernel on one rank (times in µs; -1 or "" where the trace is silent)."""

    rank: int
    process_group: str
    index: int  # position among this rank's kernels of the group, by start time
    seq: int  # the c10d sequence number the trace records, -1 when absent
    name: str  # collective name ("allreduce", "all_to_all", ...), "" when unrecorded
    kernel: str
    stream: int
    ts: float
    dur: float
    group_size: int
    group_ranks: str  # JSON text of the group's ranks, "" when unrecorded
    dtype: str
    in_nelems: int
    out_nelems: int

    @property
    def end(self) -> float:
        return self.ts + self.dur


@dataclass(frozen=True)
class RankCollectives:
    """The collectives of one rank, one row per kernel in start order (columns: COLUMNS).

    Small and picklable: it is what a per-rank task hands back to the job analysis.
    """

    rank: int
    table: pd.DataFrame

    def __len__(self) -> int:
        return len(self.table)

    def records(self) -> Iterator[Collective]:
        for row in self.table.itertuples(index=False):
            yield Collective(rank=self.rank, **row._asdict())

    @property
    def total_dur(self) -> float:
        return float(self.table["dur"].sum())


def rank_of(trace: Trace, rank: int | None = None) -> int:
    """`rank` when given, else the rank the trace's `distributedInfo` records."""
    if rank is not None:
        return rank
    info = trace.meta.distributed
    if info is None or info.rank is None:
        raise NoRank(f"{trace.path.name}: no rank in distributedInfo; pass the rank")
    return int(info.rank)


def rank_collectives(source: Trace | TraceModel, rank: int | None = None) -> RankCollectives:
    """The communication kernels of one rank's trace, numbered within their process group.

    Reads only the events table, so a task that wants the collectives alone can skip
    building the model; one that has the model passes it.
    """
    trace = source.trace if isinstance(source, TraceModel) else source
    ev = trace.events
    kernels = ev[(ev["cat"] == "kernel").to_numpy()]
    ev = kernels[classify_events(kernels) == "communication"]
    table = pd.DataFrame(
        {
            "process_group": _text(ev["pg_name"], DEFAULT_GROUP),
            "seq": ev["coll_seq"].to_numpy(np.int64),
            "name": _text(ev["collective_name"], ""),
            "kernel": ev["name"].astype(str).to_numpy(object),
            "stream": ev["stream"].to_numpy(np.int64),
            "ts": ev["ts"].to_numpy(np.float64),
            "dur": ev["dur"].to_numpy(np.float64),
            "group_size": ev["group_size"].to_numpy(np.int64),
            "group_ranks": ranks_text(ev["pg_ranks"]),
            "dtype": _text(ev["coll_dtype"], ""),
            "in_nelems": ev["in_msg_nelems"].to_numpy(np.int64),
            "out_nelems": ev["out_msg_nelems"].to_numpy(np.int64),
        }
    )
    table = table.sort_values("ts", kind="stable").reset_index(drop=True)
    table.insert(1, "index", table.groupby("process_group").cumcount().to_numpy(np.int64))
    return RankCollectives(rank=rank_of(trace, rank), table=table[list(COLUMNS)])


def collectives_of_file(path: str | Path, rank: int | None = None) -> RankCollectives:
    """Load one rank's trace and return its collectives (what a per-rank task runs)."""
    return rank_collectives(load_trace(path), rank)


def _text(column: pd.Series, missing: str) -> np.ndarray:
    values = column.astype(object).to_numpy()
    return np.array([v if isinstance(v, str) and v else missing for v in values], dtype=object)


def ranks_text(column: pd.Series) -> np.ndarray:
    """The group's ranks as compact JSON text ("" when not recorded). Kineto writes them as a
    list or as the list's text in a string ("[0, 1, 2, 3]"); both read the same."""
    out = []
    for value in column.astype(object).to_numpy():
        ranks = value if isinstance(value, str) else ""
        for _ in range(2):  # the JSON text of a list, or of a string holding one
            try:
                ranks = json.loads(ranks) if isinstance(ranks, str) and ranks else ranks
            except ValueError:
                break
        out.append(json.dumps(ranks, separators=(",", ":")) if isinstance(ranks, list) else "")
    return np.array(out, dtype=object)
