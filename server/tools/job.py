"""`load_job`: every rank of a distributed job analysed in parallel on Dask, each rank's run
usable with the run tools, the job's tables readable as resources (docs/multirank.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import anyio.from_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from rooflens.analyzers import layout
from rooflens.analyzers.job.cluster import ClusterChoice, cluster_warnings
from rooflens.analyzers.job.job_folder import JobRank
from rooflens.analyzers.job.overview import JobOverview, job_overview
from rooflens.analyzers.job.rank_task import RankDone, RankOutcome

from .. import jobs
from ..bounded import fit
from ..jobs import JobLoaded, JobRequest, find_job
from ..notify import log_to_client, runs_changed
from ..owners import split_handle
from ..state import AppState
from ..trace_text import JobOverviewView, traced
from .common import (
    READ_ONLY,
    WRITES_RUN,
    Ctx,
    LimitArg,
    OffsetArg,
    PlatformArg,
    app_state,
    engine,
    owner,
)
from .load import OutputDirArg

MAX_RANKS_LISTED = 64  # rank rows in a result; job_tables/ranks.csv has them all
MAX_FAILURES = 5  # failed ranks in a result's overview; ranks_failed counts them all
MAX_REASON = 300  # characters of a failed rank's reason in a result

PathsArg = Annotated[
    list[str],
    Field(
        min_length=1,
        max_length=4096,
        description="The ranks' traces in the allowed directories: files, folders or globs "
        "(job/*.json.gz); no '..' after a wildcard; '[[]' is a literal '['.",
    ),
]
RankRegexArg = Annotated[
    str | None,
    Field(
        max_length=200,
        description="Regex whose group 'rank' (else the first) is a file's rank when "
        "distributedInfo has none; default: rank3, worker3, proc3.",
    ),
]
UntilArg = Annotated[
    Literal["none", "loaded", "prepared", "analysed", "drafted", "aggregated", "reported"],
    Field(
        description="Last step of each rank's run: loaded (perf report), reported (its "
        "analysis.md), none (job tables only)."
    ),
]
WorkersArg = Annotated[
    int | None,
    Field(
        ge=1,
        le=256,
        description="Dask worker processes; default sized to the machine.",
    ),
]


JobIdArg = Annotated[str, Field(description="The job_id load_job returned.")]


class JobRankRow(BaseModel):
    rank: int
    status: str = Field(description="done or failed")
    run_id: str | None = Field(description="the rank's run, for the run tools; null if none")
    reason: str | None = traced("why the rank failed", default=None)


class JobLoadResult(BaseModel):
    job_id: str
    output_dir: str
    ranks_done: int
    ranks_failed: int
    warnings: list[str]
    overview: JobOverviewView = Field(description="stragglers, waits, causes and findings (ms)")
    ranks: list[JobRankRow] = Field(description="the first ranks, as many as fit")
    next_offset: int | None = Field(
        default=None, description="more ranks: get_job_overview(job_id, offset=next_offset)"
    )
    resources: list[str] = Field(description="rooflens:// URIs of the job's files")


class JobOverviewResult(BaseModel):
    job_id: str
    created: str
    platform: str | None
    until: str = Field(description="the last pipeline step of each rank's own run")
    ranks_done: int
    ranks_failed: int
    warnings: list[str]
    overview: JobOverviewView = Field(description="stragglers, waits, causes and findings (ms)")
    ranks: list[JobRankRow] = Field(description="a page of the ranks, by rank")
    total_ranks: int
    offset: int
    has_more: bool
    next_offset: int | None
    resources: list[str] = Field(description="rooflens:// URIs of the job's files")


def job_resources(job_id: str) -> list[str]:
    base = f"rooflens://jobs/{job_id}"
    tables = ("ranks", "straggler_summary", "nccl_implicit_sync")
    return [f"{base}/report", f"{base}/plot", *(f"{base}/tables/{t}" for t in tables), base]


def rank_row(rank: JobRank) -> JobRankRow:
    failed = rank.status != "done"
    return JobRankRow(
        rank=rank.rank,
        status=rank.status,
        run_id=rank.run_id,
        reason=_reason(f"{rank.failure}: {rank.reason}", rank.trace_path) if failed else None,
    )


def _reason(text: str, path: str) -> str:
    """Why a rank failed, its trace named by file name (the job record has the path)."""
    return _short(text.replace(path, Path(path).name))


def _short(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


def brief(overview: JobOverview) -> JobOverview:
    """The overview with at most MAX_FAILURES failed ranks, each by its file name (the job
    record has the paths) with its reason shortened: a job whose ranks all fail must not
    make a result of every path and error text."""
    failures = [
        f.model_copy(update={"path": Path(f.path).name, "reason": _reason(f.reason, f.path)})
        for f in overview.failures[:MAX_FAILURES]
    ]
    return overview.model_copy(update={"failures": failures})


def read_overview(
    st: AppState, job_id: str, who: str | None, offset: int, limit: int
) -> JobOverviewResult:
    """A finished job's overview (job_overview.json) and a page of its ranks, from its folder:
    what load_job returned, readable again later or after a restart."""
    if split_handle(job_id, "run") is not None:  # a plain id or a stateless caller's
        raise ToolError(
            f"{job_id} is a run id (one rank's run: use it with the run tools); job tools take "
            "the job id load_job returned, like job-3f9a1c2b7d4e"
        )
    folder, record = find_job(st, job_id, who)
    path = folder / layout.JOB_OVERVIEW
    if not path.is_file():
        raise ToolError(
            f"job {job_id} has no {layout.JOB_OVERVIEW} (written by an older rooflens); call "
            "load_job again on its traces, or read its report resource"
        )
    ranks = sorted(record.ranks, key=lambda x: x.rank)
    base = JobOverviewResult(
        job_id=job_id,
        created=record.created,
        platform=record.platform,
        until=record.until,
        ranks_done=sum(x.status == "done" for x in ranks),
        ranks_failed=sum(x.status != "done" for x in ranks),
        warnings=record.warnings,
        overview=brief(JobOverview.model_validate_json(path.read_bytes())),
        ranks=[],
        total_ranks=len(ranks),
        offset=offset,
        has_more=False,
        next_offset=None,
        resources=job_resources(job_id),
    )
    page = [rank_row(x) for x in ranks[offset : offset + limit]]
    kept, _ = fit(base, "ranks", page, st.payload_budget)
    end = offset + len(kept)
    more = end < len(ranks)
    return base.model_copy(
        update={"ranks": kept, "has_more": more, "next_offset": end if more else None}
    )


def job_result(loaded: JobLoaded, budget: int) -> JobLoadResult:
    result = loaded.result
    rows = [
        JobRankRow(
            rank=o.rank,
            status="done" if isinstance(o, RankDone) else "failed",
            run_id=loaded.runs[o.rank].id if o.rank in loaded.runs else None,
            reason=None if isinstance(o, RankDone) else _reason(f"{o.kind}: {o.reason}", o.path),
        )
        for o in result.outcomes[:MAX_RANKS_LISTED]
    ]
    base = JobLoadResult(
        job_id=loaded.job_id,
        output_dir=str(loaded.folder),
        ranks_done=len(result.done),
        ranks_failed=len(result.failed),
        # the operator's DASK_SCHEDULER_ADDRESS off this machine without TLS is said too
        warnings=[
            *result.inputs.warnings,
            *result.analysis.warnings,
            *cluster_warnings(ClusterChoice.from_args(None, None)),
        ],
        overview=brief(job_overview(result.analysis)),
        ranks=[],
        resources=job_resources(loaded.job_id),
    )
    kept, _ = fit(base, "ranks", rows, budget)
    more = len(kept) < len(result.outcomes)
    return base.model_copy(update={"ranks": kept, "next_offset": len(kept) if more else None})


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Load a distributed job", annotations=WRITES_RUN)
    async def load_job(
        paths: PathsArg,
        ctx: Ctx,
        rank_regex: RankRegexArg = None,
        platform: PlatformArg = None,
        output_dir: OutputDirArg = None,
        until: UntilArg = "loaded",
        workers: WorkersArg = None,
    ) -> JobLoadResult:
        """Analyse a distributed job's ranks in parallel and match their collectives (waits,
        skews, straggler); each rank becomes a run, a failed one is listed with its reason."""
        request = JobRequest(paths, rank_regex, platform, output_dir, until, workers)

        def tick(outcome: RankOutcome, done: int, total: int) -> None:  # a worker thread
            status = "done" if isinstance(outcome, RankDone) else "failed"
            anyio.from_thread.run(ctx.report_progress, done, total, f"rank {outcome.rank} {status}")

        loaded = await engine(jobs.load_job, app_state(ctx), request, owner(ctx), tick)
        if loaded.runs:
            await runs_changed(ctx)
        for o in loaded.result.failed:
            await log_to_client(ctx, "warning", f"{loaded.job_id}: rank {o.rank} failed")
        return job_result(loaded, app_state(ctx).payload_budget)

    @mcp.tool(name="get_job_overview", title="Job overview", annotations=READ_ONLY)
    async def job_overview_tool(
        job_id: JobIdArg,
        ctx: Ctx,
        limit: LimitArg = MAX_RANKS_LISTED,
        offset: OffsetArg = 0,
    ) -> JobOverviewResult:
        """A loaded job in brief: straggler and why, waiters, imbalance, findings (ms), a page of
        ranks with their run_id."""
        return await engine(read_overview, app_state(ctx), job_id, owner(ctx), offset, limit)
