"""What a job analysis holds (analysis.py computes it; findings.py, the report and the plot
read it), in a module of its own so that they import it without importing each other."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..findings.ranking.impact_scale import PriorityItem
from .causes import Cause
from .matching import JobCollectives
from .outside import OutsideRanks
from .stragglers import RankWaits
from .summary import TopOp


@dataclass(frozen=True, slots=True)
class RankFailure:
    """A rank whose trace could not be summarised, and why (the job goes on without it)."""

    path: str
    reason: str
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class Imbalance:
    """How unevenly GPU compute is spread over the ranks (µs over each rank's trace)."""

    median_us: float
    max_us: float
    max_rank: int
    max_over_median: float  # 1.0 when even
    cv: float  # standard deviation over mean


@dataclass(frozen=True)
class JobAnalysis:
    """Everything the job report shows; times in µs unless a name says otherwise.

    `steps` is the number of profiler steps the ranks' traces hold (their most common count;
    0 when the traces mark none, in which case savings are per profiled window, not per step).
    `slowest_rank` is the straggler, else the rank with the most compute.
    """

    ranks: tuple[int, ...]
    world_size: int | None
    missing: tuple[int, ...]  # ranks of the world with no summary and no failure
    failures: tuple[RankFailure, ...]
    platform: str | None
    steps: int
    collectives: JobCollectives
    waits: tuple[RankWaits, ...]
    straggler: RankWaits | None
    longest_waiter: RankWaits | None
    bandwidth: pd.DataFrame
    timelines: pd.DataFrame
    imbalance: Imbalance
    slowest_rank: int
    slowest_ops: tuple[TopOp, ...]
    causes: tuple[Cause, ...]
    # figures above the others' median that some rank that arrived earlier has as much of
    ruled_out: tuple[Cause, ...]
    findings: tuple[PriorityItem, ...]
    paths: dict[int, str]
    warnings: tuple[str, ...] = ()  # the job's own: no platform known
    # collectives whose group holds ranks the trace set lacks (None: every group traced whole)
    outside: OutsideRanks | None = None

    @property
    def per(self) -> str:
        """What savings are counted over."""
        return "step" if self.steps else "profiled window"
