"""Collectives whose group holds ranks the trace set lacks
(docs/multirank.md#ranks-outside-the-trace-set).

A synchronising collective ends on every rank when the last rank of its group arrives. When
the group has ranks with no trace here, even the last *traced* arrival may spend most of its
time in the kernel waiting for one of them: its duration is that wait plus the transfer, and
the traced ranks' ends line up however far apart they started. Read as transfer time, that
wait would look like a slow link or communication to overlap; it is a wait for another rank.

The transfer is bounded by the fastest instance of the same collective (kind, message size,
group): the time in each instance beyond that floor is a wait for a rank outside the set, a
lower bound (the floor itself may hold a wait). With one instance, or the same wait at every
instance, the floor holds all of it and the trace set cannot split wait from transfer: the
summary says so instead of a figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .matching import JobCollectives

MIN_WAIT_US = 50.0  # an instance's time beyond the floor counted as a wait from this much on


@dataclass(frozen=True, slots=True)
class OutsideRanks:
    """The job's collectives whose group is larger than the ranks traced in it (µs, whole
    trace). `last_traced_us`: the summed time the last traced arrival spent in them (wait for
    untraced ranks plus transfer); `wait_us`: the part beyond each signature's fastest
    instance; `end_skew_us`: the median spread of the traced ranks' ends."""

    collectives: int
    of: int  # matched collectives in all
    group_size: int
    traced: int  # the most ranks traced in one such group
    last_traced_us: float
    wait_us: float
    end_skew_us: float
    start_skew_us: float
    signatures_split: int  # signatures whose instances differ enough to split wait from transfer

    @property
    def split(self) -> bool:
        return self.wait_us > 0


def incomplete_groups(job: JobCollectives) -> pd.Series:
    """Per matched collective: whether its group has ranks with no arrival here."""
    coll = job.collectives
    if coll.empty:
        return pd.Series(dtype=bool)
    size = pd.to_numeric(coll["group_size"], errors="coerce").fillna(0).to_numpy(np.float64)
    return pd.Series(size > coll["ranks"].to_numpy(np.float64), index=coll.index)


def outside_ranks(job: JobCollectives) -> OutsideRanks | None:
    """The summary, or None when every matched collective's group was traced whole."""
    coll = job.collectives
    partial = incomplete_groups(job)
    if coll.empty or not partial.any():
        return None
    rows = coll[partial.to_numpy()]
    latency = rows["comm_latency"].to_numpy(np.float64)
    floor = beyond_floor(rows)
    waits = np.where(floor >= MIN_WAIT_US, floor, 0.0)
    signatures = rows.assign(_beyond=waits).groupby(_SIGNATURE, dropna=False)["_beyond"].max()
    return OutsideRanks(
        collectives=len(rows),
        of=len(coll),
        group_size=int(pd.to_numeric(rows["group_size"], errors="coerce").max()),
        traced=int(rows["ranks"].max()),
        last_traced_us=float(latency.sum()),
        wait_us=float(waits.sum()),
        end_skew_us=float(np.median(rows["end_skew"].to_numpy(np.float64))),
        start_skew_us=float(np.median(rows["start_skew"].to_numpy(np.float64))),
        signatures_split=int((signatures > 0).sum()),
    )


_SIGNATURE = ["kind", "msg_nelems", "group_size"]


def beyond_floor(rows: pd.DataFrame) -> np.ndarray:
    """Each collective's time beyond the fastest instance of its signature (µs)."""
    if rows.empty:
        return np.zeros(0)
    floor = rows.groupby(_SIGNATURE, dropna=False)["comm_latency"].transform("min")
    return (rows["comm_latency"] - floor).to_numpy(np.float64)
