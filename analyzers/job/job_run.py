"""A whole job, end to end: its checked inputs fanned out one task per rank, the outcomes
gathered, the collectives matched across the ranks that finished, and the job folder written.

What a face (CLI, MCP) calls; it decides where the folder goes and how progress is shown.
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import layout
from ..report.write_csv import atomic_write_bytes
from .analysis import JobAnalysis, RankFailure, job_analysis
from .cluster import ClusterChoice, Progress
from .inputs import JobInputs
from .job_folder import (
    JobRank,
    JobRecord,
    new_job_id,
    seal_job,
    write_table,
    write_text,
)
from .overview import job_overview
from .plot import draw_job_plot
from .rank_task import NO_RUN, RankDone, RankFailed, RankOutcome, RankTask
from .report import job_report_md
from .stragglers import RankWaits
from .tables import implicit_sync_table, straggler_table


class JobFailed(RuntimeError):
    """No rank of the job could be analysed; the message gives the first reasons."""


@dataclass(frozen=True)
class JobResult:
    """The outcomes of every rank and what the ranks that finished say together."""

    inputs: JobInputs
    outcomes: tuple[RankOutcome, ...]
    analysis: JobAnalysis

    @property
    def waits(self) -> tuple[RankWaits, ...]:
        return self.analysis.waits

    @property
    def done(self) -> list[RankDone]:
        return [o for o in self.outcomes if isinstance(o, RankDone)]

    @property
    def failed(self) -> list[RankFailed]:
        return [o for o in self.outcomes if isinstance(o, RankFailed)]


def rank_tasks(
    inputs: JobInputs, folder: Path, platform: str | None, until: str, owner: str | None = None
) -> list[RankTask]:
    """One work order per rank; each rank's run goes to `folder`/ranks/rank-N."""
    return [
        RankTask(
            path=str(f.path),
            rank=f.rank,
            platform=platform,
            run_folder=None if until == NO_RUN else str(folder / layout.rank_run(f.rank)),
            until=until,
            owner=owner,
        )
        for f in inputs.files
    ]


def analyze_job(
    inputs: JobInputs,
    folder: Path,
    choice: ClusterChoice,
    *,
    platform: str | None = None,
    until: str = NO_RUN,
    progress: Progress | None = None,
    owner: str | None = None,
) -> JobResult:
    """Fan the ranks out, then match the collectives of those that finished. `choice` should
    be resolved (`ClusterChoice.resolved`) so that the record says how many workers ran."""
    from .fanout import run_tasks  # dask loads when a job runs

    tasks = rank_tasks(inputs, folder, platform, until, owner)
    outcomes = run_tasks(tasks, choice, progress)
    done = [o for o in outcomes if isinstance(o, RankDone)]
    if not done:
        reasons = "; ".join(f"rank {o.rank}: {o.reason}" for o in outcomes[:3])
        raise JobFailed(f"no rank of the job could be analysed ({reasons})")
    failures = [
        RankFailure(o.path, f"{o.kind}: {o.reason}", o.rank)
        for o in outcomes
        if isinstance(o, RankFailed)
    ]
    analysis = job_analysis([d.summary for d in done], failures)
    return JobResult(inputs, tuple(outcomes), analysis)


def cluster_label(choice: ClusterChoice) -> str:
    """How the job ran, without the scheduler's address (job.json is shared)."""
    if choice.scheduler:
        return "external Dask scheduler"
    return f"embedded LocalCluster ({choice.workers} worker processes)"


def ranks_table(result: JobResult) -> pd.DataFrame:
    """The job's index, one row per rank: its trace, status, run folder or why it failed;
    then its GPU timeline and wait (job_analysis's timeline table; empty for a failed rank)."""
    rows = [
        {
            "rank": o.rank,
            "trace": Path(o.path).name,
            "status": "done" if isinstance(o, RankDone) else "failed",
            "run_folder": layout.rank_run(o.rank) if isinstance(o, RankDone) and o.run_id else "",
            "reason": "" if isinstance(o, RankDone) else f"{o.kind}: {o.reason}",
        }
        for o in result.outcomes
    ]
    return pd.DataFrame(rows).merge(result.analysis.timelines, on="rank", how="left")


def job_record(
    result: JobResult, choice: ClusterChoice, platform: str | None, until: str, job_id: str
) -> JobRecord:
    sources = {f.rank: f.rank_source for f in result.inputs.files}
    ranks = []
    for o in result.outcomes:
        common = {"rank": o.rank, "trace_path": o.path, "rank_source": sources[o.rank]}
        if isinstance(o, RankDone):
            folder = layout.rank_run(o.rank) if o.run_id else None
            ranks.append(
                JobRank(
                    **common,
                    status="done",
                    trace=o.identity,
                    run_id=o.run_id,
                    run_folder=folder,
                    run_note=o.run_note,
                    seconds=round(o.seconds, 3),
                )
            )
        else:
            ranks.append(JobRank(**common, status="failed", failure=o.kind, reason=o.reason))
    return JobRecord(
        job_id=job_id,
        world_size=result.inputs.world_size,
        platform=platform,
        until=until,
        cluster=cluster_label(choice),
        ranks=ranks,
        missing=list(result.inputs.missing),
        warnings=[*result.inputs.warnings, *result.analysis.warnings],
    )


def job_tables(result: JobResult) -> dict[str, pd.DataFrame]:
    """The job's tables by their CSV path in the job folder."""
    a = result.analysis
    return {
        layout.JOB_RANKS: ranks_table(result),
        layout.JOB_COLLECTIVES: implicit_sync_table(a.collectives),
        layout.JOB_STRAGGLERS: straggler_table(list(a.waits)),
    }


def write_job_folder(
    folder: Path,
    result: JobResult,
    choice: ClusterChoice,
    platform: str | None,
    until: str,
    job_id: str | None = None,
) -> JobRecord:
    """The job-level tables, plot and report, then the sealed record (after the ranks wrote
    their runs): the report links each rank's own analysis.md where it was written."""
    a = result.analysis
    for rel, table in job_tables(result).items():
        write_table(folder, rel, table)
    plot = draw_job_plot(a)
    if plot.png_bytes is not None:
        atomic_write_bytes(folder / layout.JOB_PLOT, plot.png_bytes)
    reports = {
        o.rank: f"{layout.rank_run(o.rank)}/{layout.REPORT}"
        for o in result.done
        if (folder / layout.rank_run(o.rank) / layout.REPORT).is_file()
    }
    drawn = layout.JOB_PLOT if plot.png_bytes is not None else None
    write_text(folder, layout.JOB_REPORT, job_report_md(a, reports, drawn))
    write_text(folder, layout.JOB_OVERVIEW, job_overview(a).model_dump_json(indent=2) + "\n")
    record = job_record(result, choice, platform, until, job_id or new_job_id())
    return seal_job(folder, record)
