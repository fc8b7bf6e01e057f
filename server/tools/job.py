"""`load_job`: every rank of a distributed job analysed in parallel on Dask, each rank's run
usable with the run tools, the job's tables readable as resources (docs/multirank.md)."""

from __future__ import annotations

from typing import Annotated, Literal

import anyio.from_thread
from mcp.server import MCPServer
from pydantic import BaseModel, Field

from rooflens.analyzers.job.overview import JobOverview, job_overview
from rooflens.analyzers.job.rank_task import RankDone, RankOutcome
from rooflens.server import jobs
from rooflens.server.jobs import JobLoaded, JobRequest
from rooflens.server.notify import log_to_client, runs_changed
from rooflens.server.tools.common import (
    WRITES_RUN,
    Ctx,
    PlatformArg,
    Strict,
    app_state,
    engine,
    owner,
)
from rooflens.server.tools.load import OutputDirArg

MAX_RANKS_LISTED = 64  # rank rows in a result; job_tables/ranks.csv has them all

PathsArg = Annotated[
    list[str],
    Field(
        min_length=1,
        max_length=4096,
        description="The ranks' traces inside the allowed directories: files, folders (their "
        ".json/.json.gz files) or globs such as 'job/*.json.gz'; relative paths start from "
        "the first allowed directory.",
    ),
]
RankRegexArg = Annotated[
    str | None,
    Field(
        max_length=200,
        description="Regular expression whose group 'rank' (else first group) is the rank in "
        "a file name, for traces whose distributedInfo records none; default matches rank3, "
        "rank_3, worker3, proc3.",
    ),
]
UntilArg = Annotated[
    Literal["none", "loaded", "prepared", "analysed", "drafted", "aggregated", "reported"],
    Field(
        description="The last pipeline step of each rank's own run: loaded (default: perf "
        "report; the run tools take each rank's run_id from there), reported for every "
        "rank's analysis.md, none for the job's tables only."
    ),
]
WorkersArg = Annotated[
    int | None,
    Field(
        ge=1,
        le=256,
        description="Worker processes of the embedded Dask cluster; omit to size it to the "
        "machine (ignored when the server runs on a scheduler, DASK_SCHEDULER_ADDRESS).",
    ),
]


class JobRankRow(BaseModel):
    rank: int
    status: str = Field(description="done or failed")
    run_id: str | None = Field(description="the rank's run, for the run tools; null if none")
    reason: str | None = Field(default=None, description="why the rank failed")


class JobLoadResult(BaseModel):
    job_id: str
    output_dir: str
    ranks_done: int
    ranks_failed: int
    warnings: list[str]
    overview: JobOverview = Field(description="stragglers, waits, causes and findings (ms)")
    ranks: list[JobRankRow] = Field(description=f"the first {MAX_RANKS_LISTED} ranks")
    resources: list[str] = Field(description="rooflens:// URIs of the job's files")


def job_result(loaded: JobLoaded) -> JobLoadResult:
    result = loaded.result
    rows = [
        JobRankRow(
            rank=o.rank,
            status="done" if isinstance(o, RankDone) else "failed",
            run_id=loaded.runs[o.rank].id if o.rank in loaded.runs else None,
            reason=None if isinstance(o, RankDone) else f"{o.kind}: {o.reason}",
        )
        for o in result.outcomes[:MAX_RANKS_LISTED]
    ]
    base = f"rooflens://jobs/{loaded.job_id}"
    return JobLoadResult(
        job_id=loaded.job_id,
        output_dir=str(loaded.folder),
        ranks_done=len(result.done),
        ranks_failed=len(result.failed),
        warnings=list(result.inputs.warnings),
        overview=job_overview(result.analysis),
        ranks=rows,
        resources=[
            f"{base}/report",
            f"{base}/plot",
            f"{base}/tables/ranks",
            f"{base}/tables/straggler_summary",
            f"{base}/tables/nccl_implicit_sync",
            base,
        ],
    )


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Load a distributed job", annotations=WRITES_RUN)
    async def load_job(
        paths: PathsArg,
        ctx: Ctx,
        strict: Strict,
        rank_regex: RankRegexArg = None,
        platform: PlatformArg = None,
        output_dir: OutputDirArg = None,
        until: UntilArg = "loaded",
        workers: WorkersArg = None,
    ) -> JobLoadResult:
        """Analyse every rank of a distributed job in parallel (Dask) and match the ranks'
        collectives: waits, skews and the straggler. Each rank becomes a run (its run_id
        works with every run tool); the job's tables are resources. Duplicate ranks and
        files of different jobs are refused; missing ranks are warned about; a rank that
        fails is listed with its reason while the others finish."""
        request = JobRequest(paths, rank_regex, platform, output_dir, until, workers)

        def tick(outcome: RankOutcome, done: int, total: int) -> None:  # a worker thread
            status = "done" if isinstance(outcome, RankDone) else "failed"
            anyio.from_thread.run(ctx.report_progress, done, total, f"rank {outcome.rank} {status}")

        loaded = await engine(jobs.load_job, app_state(ctx), request, owner(ctx), tick)
        if loaded.runs:
            await runs_changed(ctx)
        for o in loaded.result.failed:
            await log_to_client(ctx, "warning", f"{loaded.job_id}: rank {o.rank} failed")
        return job_result(loaded)
