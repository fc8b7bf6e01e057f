"""The job analysis: every rank's summary put side by side (docs/multirank.md#the-job-analysis).

From the per-rank summaries alone (no trace is read here): the collectives matched across
ranks with their waits and the straggler summary, bandwidth where sizes are recorded, the
per-rank timeline table and the spread of compute, the straggler's causes and its own top
operations, and the job's findings on the report-wide impact scale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from .bandwidth import collective_bandwidth
from .causes import ruled_out_causes, straggler_causes
from .findings import job_findings
from .matching import match_collectives
from .outside import outside_ranks
from .records import Imbalance, JobAnalysis, RankFailure
from .stragglers import (
    RankWaits,
    longest_waiter,
    straggler,
    straggler_summary,
)
from .summary import RankSummary

TIMELINE_COLUMNS = (
    "rank",
    "compute_us",
    "exposed_comm_us",
    "exposed_copy_us",
    "idle_us",
    "total_us",
    "wait_us",
    "data_loading_us",
    "steps",
)


class EmptyJob(ValueError):
    """No rank could be summarised: there is nothing to analyse."""


def job_analysis(
    summaries: Iterable[RankSummary], failures: Iterable[RankFailure] = ()
) -> JobAnalysis:
    """Analyse a job from its ranks' summaries; ranks that failed are listed, not guessed."""
    ranks = sorted(summaries, key=lambda s: s.rank)
    if not ranks:
        raise EmptyJob("no rank of the job could be summarised; see each rank's error")
    failures = tuple(failures)
    job = match_collectives(s.collectives for s in ranks)
    waits = tuple(straggler_summary(job))
    late = straggler(list(waits)) if len(ranks) > 1 else None  # one rank waits for no one
    by_rank = {s.rank: s for s in ranks}
    imbalance = compute_imbalance(ranks)
    slowest = late.rank if late is not None else imbalance.max_rank
    others = [s for s in ranks if s.rank != slowest]
    causes = straggler_causes(by_rank[slowest], others, late.held_others_us) if late else ()
    ruled_out = ruled_out_causes(by_rank[slowest], others, late.held_others_us) if late else ()
    world = _world_size(ranks)
    platform = next((s.platform for s in ranks if s.platform is not None), None)
    analysis = JobAnalysis(
        ranks=tuple(by_rank),
        world_size=world,
        missing=_missing(world, by_rank, failures),
        failures=failures,
        platform=platform.name if platform is not None else None,
        steps=_steps(ranks),
        collectives=job,
        waits=waits,
        straggler=late,
        longest_waiter=longest_waiter(list(waits)),
        bandwidth=collective_bandwidth(job.collectives, platform),
        timelines=timeline_table(ranks, waits),
        imbalance=imbalance,
        slowest_rank=slowest,
        slowest_ops=by_rank[slowest].top_ops,
        causes=causes,
        ruled_out=ruled_out,
        findings=(),
        paths={s.rank: s.path for s in ranks},
        warnings=() if platform is not None else (_no_platform(ranks),),
        outside=outside_ranks(job),
    )
    return replace(analysis, findings=tuple(job_findings(analysis)))


def _no_platform(ranks: Sequence[RankSummary]) -> str:
    devices = ", ".join(sorted({s.device for s in ranks})) or "no GPU named"
    return (
        f"no platform is known for the job's GPU ({devices}), so nothing is scored against "
        "a roofline and no collective's bandwidth is set against a link; pass --platform NAME "
        "(`rooflens platforms` lists them) or --platform-file PATH (MCP load_job: `platform`)"
    )


def timeline_table(ranks: Sequence[RankSummary], waits: Iterable[RankWaits]) -> pd.DataFrame:
    """One row per rank (TIMELINE_COLUMNS): its GPU timeline, its wait at collectives and
    its data loading."""
    wait = {w.rank: w.total_wait_us for w in waits}
    rows = [
        (
            s.rank,
            s.timeline.compute_us,
            s.timeline.exposed_comm_us,
            s.timeline.exposed_copy_us,
            s.timeline.idle_us,
            s.timeline.total_us,
            wait.get(s.rank, 0.0),
            s.data_loading_us,
            s.steps,
        )
        for s in ranks
    ]
    return pd.DataFrame(rows, columns=list(TIMELINE_COLUMNS))


def compute_imbalance(ranks: Sequence[RankSummary]) -> Imbalance:
    compute = np.array([s.timeline.compute_us for s in ranks], dtype=np.float64)
    median, mean = float(np.median(compute)), float(compute.mean())
    top = int(np.argmax(compute))
    return Imbalance(
        median_us=median,
        max_us=float(compute[top]),
        max_rank=ranks[top].rank,
        max_over_median=float(compute[top]) / median if median > 0 else 1.0,
        cv=float(compute.std()) / mean if mean > 0 else 0.0,
    )


def _world_size(ranks: Sequence[RankSummary]) -> int | None:
    sizes = [s.world_size for s in ranks if s.world_size]
    return max(sizes) if sizes else None


def _missing(
    world: int | None, present: dict[int, RankSummary], failures: tuple[RankFailure, ...]
) -> tuple[int, ...]:
    if world is None:
        return ()
    failed = {f.rank for f in failures}
    return tuple(r for r in range(world) if r not in present and r not in failed)


def _steps(ranks: Sequence[RankSummary]) -> int:
    counts = Counter(s.steps for s in ranks)
    return counts.most_common(1)[0][0]
