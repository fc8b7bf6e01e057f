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
from .collective_kinds import kind_of_kernel, kind_of_operator, size_of_input

DEFAULT_GROUP = "all"  # the group of collectives whose trace names none
OPERATOR_DEPTH = 3  # operators looked at above a collective kernel's launch
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
    # what the collective is and its size, where the c10d fields above are silent read from
    # its operator or kernel (collective_kinds.py); the fields above stay as recorded
    "kind",
    "msg_nelems",
    "msg_dtype",
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
    kind: str  # the recorded name, else what its operator or kernel says ("" when neither)
    msg_nelems: int  # the recorded size, else its operator's input (-1 when neither)
    msg_dtype: str

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
    events = trace.events
    kernels = events[(events["cat"] == "kernel").to_numpy()]
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
    _fill_unrecorded(table, ev.index.to_numpy(), source if isinstance(source, TraceModel) else None)
    table = table.sort_values("ts", kind="stable").reset_index(drop=True)
    table.insert(1, "index", table.groupby("process_group").cumcount().to_numpy(np.int64))
    return RankCollectives(rank=rank_of(trace, rank), table=table[list(COLUMNS)])


def _fill_unrecorded(table: pd.DataFrame, uids: np.ndarray, model: TraceModel | None) -> None:
    """`kind`, `msg_nelems`, `msg_dtype`: the recorded c10d fields, and for kernels that carry
    none (older PyTorch) the kind from the c10d operator above the launch (with the model)
    or from the kernel's name, the size and dtype from the launching operator's input."""
    names = table["name"].to_numpy(object).copy()
    in_nelems = np.maximum(
        table["in_nelems"].to_numpy(np.int64), table["out_nelems"].to_numpy(np.int64)
    )
    dtypes = table["dtype"].to_numpy(object).copy()
    unnamed = np.flatnonzero(names == "")
    unsized = np.flatnonzero(in_nelems < 0)
    table["kind"], table["msg_nelems"], table["msg_dtype"] = names, in_nelems, dtypes
    if len(unnamed) == 0 and len(unsized) == 0:
        return
    operators = _operators(model, uids) if model is not None else [[] for _ in uids]
    for k in unnamed.tolist():
        kinds = (kind_of_operator(str(model.names[o])) for o in operators[k])
        by_op = next((kind for kind in kinds if kind), "")
        names[k] = by_op or kind_of_kernel(str(table["kernel"].iat[k]))
    if model is not None:
        dims = model.events["input_dims"].astype(object).to_numpy()
        types = model.events["input_type"].astype(object).to_numpy()
        for k in unsized.tolist():
            for o in operators[k]:
                count, dtype = size_of_input(dims[o], types[o])
                if count >= 0:
                    in_nelems[k] = count
                    dtypes[k] = dtypes[k] or dtype
                    break
    table["kind"], table["msg_nelems"], table["msg_dtype"] = names, in_nelems, dtypes


def _operators(model: TraceModel, uids: np.ndarray) -> list[list[int]]:
    """Per kernel, its launching operator and the operators above it, nearest first (at
    most OPERATOR_DEPTH): `record_param_comms` inside `c10d::alltoall_base_`."""
    parent = model.tree.parent
    out = []
    for uid in uids.tolist():
        chain, at = [], int(model.launcher[uid])
        while at >= 0 and len(chain) < OPERATOR_DEPTH:
            chain.append(at)
            at = int(parent[at])
        out.append(chain)
    return out


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
