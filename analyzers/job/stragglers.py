"""Per-rank straggler summary: how often each rank arrived last or first at the job's
synchronising collectives and how long it waited for the others in total.

The straggler is the rank the others wait for: it arrives last most often and so waits least.
Definitions: docs/multirank.md#straggler-summary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .matching import JobCollectives


@dataclass(frozen=True, slots=True)
class RankWaits:
    """One rank's row of the straggler summary (times in µs)."""

    rank: int
    collectives: int  # matched collectives the rank took part in
    total_wait_us: float
    mean_wait_us: float
    times_last: int
    times_first: int
    pct_last: float  # percent of its collectives at which it arrived last
    total_collective_us: float  # summed duration of all its collective kernels
    held_others_us: float  # summed last_margin of the collectives it arrived last at


def straggler_summary(job: JobCollectives) -> list[RankWaits]:
    """One row per rank, least total wait first (the likeliest straggler at the top)."""
    arrivals, coll = job.arrivals, job.collectives
    last = coll["last_rank"].to_numpy(np.int64)
    margin = coll["last_margin"].to_numpy(np.float64)
    first = coll["earliest_rank"].to_numpy(np.int64)
    ranks = sorted(set(job.durations) | set(arrivals["rank"].astype(int)))
    by_rank = arrivals.groupby("rank")["wait"]
    totals, counts = by_rank.sum(), by_rank.size()
    rows = []
    for rank in ranks:
        n = int(counts.get(rank, 0))
        total = float(totals.get(rank, 0.0))
        times_last = int((last == rank).sum())
        rows.append(
            RankWaits(
                rank=rank,
                collectives=n,
                total_wait_us=total,
                mean_wait_us=total / n if n else 0.0,
                times_last=times_last,
                times_first=int((first == rank).sum()),
                pct_last=100.0 * times_last / n if n else 0.0,
                total_collective_us=job.durations.get(rank, 0.0),
                held_others_us=float(margin[last == rank].sum()),
            )
        )
    return sorted(rows, key=lambda r: (r.total_wait_us, r.rank))


def straggler(summary: list[RankWaits]) -> RankWaits | None:
    """The rank that arrived last most often (ties: the one that waited least), or None
    when no collective was matched or no rank held another (ranks that arrive together
    have a "last" only by the tie rule)."""
    if not summary or not any(r.times_last and r.held_others_us > 0 for r in summary):
        return None
    return max(summary, key=lambda r: (r.times_last, -r.total_wait_us, -r.rank))


def longest_waiter(summary: list[RankWaits]) -> RankWaits | None:
    """The rank that spent the most time waiting for the others."""
    return max(summary, key=lambda r: (r.total_wait_us, -r.rank)) if summary else None
