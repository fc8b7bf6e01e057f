"""`rooflens analyze-job`: every rank of a distributed job on Dask, then the job together.

The inputs are checked before any rank runs (duplicates and mixed jobs refused, missing ranks
warned about), the destination before any file is written; the job is built in a staging
folder beside `--out` (each rank's run under `ranks/rank-N`) and swapped into place whole.
A rank that fails is listed with its reason and the job goes on. Exit 2 for bad input, an
unreachable scheduler (or one whose TLS Dask's configuration does not give), or a job none of
whose ranks could be analysed. A scheduler off this machine without TLS is warned about on
stderr before any rank is sent.
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from pydantic import BaseModel

from rooflens.analyzers import layout
from rooflens.analyzers.job.cluster import ClusterChoice, ClusterError, cluster_warnings
from rooflens.analyzers.job.inputs import JobInputError, job_inputs
from rooflens.analyzers.job.job_folder import check_job_destination, seal_job
from rooflens.analyzers.job.job_run import (
    JobFailed,
    JobResult,
    analyze_job,
    job_tables,
    write_job_folder,
)
from rooflens.analyzers.job.overview import JobOverview, job_overview
from rooflens.analyzers.job.rank_task import RankDone, RankOutcome
from rooflens.analyzers.perf.platforms import UnknownPlatform, get_platform
from rooflens.analyzers.pipeline.ledger import RunFolderError, staged_output
from rooflens.analyzers.report.write_parquet import (
    ParquetUnavailable,
    require_pyarrow,
    write_parquet_folder,
)

from .common import EXIT_OK, fail, print_json
from .progress import Progress

TOP_PRINTED = 5  # findings printed; the rest are in the report
BAD_INPUT = (
    JobInputError,
    ClusterError,
    JobFailed,
    UnknownPlatform,
    RunFolderError,
    ParquetUnavailable,
)


class RankLine(BaseModel):
    rank: int
    status: str
    run_folder: str | None = None
    reason: str | None = None


class JobOutcome(BaseModel):
    """What `analyze-job` wrote: the `--json` document and the text summary's data."""

    command: str = "analyze-job"
    out: str
    job_id: str
    cluster: str
    ranks_done: int
    ranks_failed: int
    warnings: list[str]
    overview: JobOverview
    ranks: list[RankLine]
    report: str
    plot: str | None
    artifacts: list[str]


def run_job(args: argparse.Namespace) -> int:
    """Check, fan out into a staging folder, write the job, swap into `--out`, print."""
    progress = Progress()
    out = Path(args.out)
    until = args.until
    parquet = getattr(args, "format", "csv") == "parquet"
    try:
        if parquet:
            require_pyarrow()  # before any rank runs: say how to install the extra
        if args.platform:
            get_platform(args.platform)
        with progress.step("finding the ranks of the job"):
            inputs = job_inputs(args.traces, args.rank_regex)
        check_job_destination(out, [str(f.path) for f in inputs.files], force=args.force)
        choice = ClusterChoice.from_args(args.scheduler, args.workers)
        choice = choice.resolved([f.path for f in inputs.files])
        for warning in cluster_warnings(choice):  # before any work order leaves
            print(f"rooflens: warning: {warning}", file=sys.stderr)
        tell = _rank_line(progress)
        with staged_output(out) as stage:
            where = (
                "an external Dask scheduler" if choice.scheduler else f"{choice.workers} workers"
            )
            with progress.step(f"analysing {len(inputs.files)} ranks on {where}"):
                result = analyze_job(
                    inputs, stage, choice, platform=args.platform, until=until, progress=tell
                )
            with progress.step("writing the job folder"):
                record = write_job_folder(stage, result, choice, args.platform, until)
            if parquet:  # the job's own tables; each rank's run keeps its CSVs
                with progress.step("writing the job's tables as Parquet"):
                    tables = {Path(rel).stem: t for rel, t in job_tables(result).items()}
                    write_parquet_folder(tables, stage / layout.JOB_PARQUET)
                record = seal_job(stage, record)
    except BAD_INPUT as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot write the job into {out}: {exc}")
    outcome = job_outcome(out, result, record.job_id, record.cluster, sorted(record.artifacts))
    if args.json:
        print_json(outcome.model_dump(mode="json"))
    else:
        print_job(outcome, sys.stdout)
    return EXIT_OK


def _rank_line(progress: Progress):
    def tell(outcome: RankOutcome, finished: int, total: int) -> None:
        if isinstance(outcome, RankDone):
            progress.line(f"rank {outcome.rank} ({outcome.seconds:.1f} s) [{finished}/{total}]")
        else:
            progress.line(
                f"rank {outcome.rank}: {outcome.kind}: {outcome.reason} [{finished}/{total}]",
                ok=False,
            )

    return tell


def job_outcome(
    out: Path, result: JobResult, job_id: str, cluster: str, artifacts: list[str]
) -> JobOutcome:
    lines = [
        RankLine(
            rank=o.rank,
            status="done",
            run_folder=layout.rank_run(o.rank) if o.run_id else None,
        )
        if isinstance(o, RankDone)
        else RankLine(rank=o.rank, status="failed", reason=f"{o.kind}: {o.reason}")
        for o in result.outcomes
    ]
    return JobOutcome(
        out=str(out.absolute()),
        job_id=job_id,
        cluster=cluster,
        ranks_done=len(result.done),
        ranks_failed=len(result.failed),
        warnings=[*result.inputs.warnings, *result.analysis.warnings],
        overview=job_overview(result.analysis),
        ranks=lines,
        report=layout.JOB_REPORT,
        plot=layout.JOB_PLOT if layout.JOB_PLOT in artifacts else None,
        artifacts=[layout.JOB_FILE, *artifacts],
    )


def print_job(o: JobOutcome, out: TextIO) -> None:
    where, v = Path(o.out), o.overview
    world = f" of {v.world_size}" if v.world_size else ""
    out.write(f"Analysed {o.ranks_done} rank(s){world} on {o.cluster}")
    out.write(f"; {o.ranks_failed} failed.\n" if o.ranks_failed else ".\n")
    for line in o.ranks:
        if line.status == "failed":
            out.write(f"  rank {line.rank} failed: {line.reason}\n")
    for warning in o.warnings:
        out.write(f"Warning: {warning}\n")
    if v.straggler is not None:
        s = v.straggler
        out.write(
            f"Straggler: rank {s.rank} (arrived last at {s.times_last} of {s.collectives} "
            f"collectives; the others waited {s.held_others_per_step_ms:.3f} ms per {v.per} "
            "for it alone)\n"
        )
    if v.longest_waiter is not None and v.longest_waiter.total_wait_ms > 0:
        w = v.longest_waiter
        out.write(f"Longest wait: rank {w.rank}, {w.total_wait_ms:.3f} ms in all\n")
    for f in v.findings[:TOP_PRINTED]:
        out.write(f"  P{f.p_number}. {f.title}: {f.mid_ms:.3f} ms, {f.percent_mid:.2f} %\n")
    out.write(f"Ranks: {where / layout.JOB_RANKS}\n")
    out.write(f"Plot: {where / o.plot}\n" if o.plot else "")
    out.write(f"Report: {where / o.report}\n")
    out.write(f"Job {o.job_id}: {where / layout.JOB_FILE}\n")
