"""What-if: the run's trace replayed, its critical path, the step after each change."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from rooflens.analyzers.job.joint_replay import JobWhatIf, job_what_if
from rooflens.analyzers.replay.what_if import ChangeError
from rooflens.analyzers.replay.what_if import what_if as replay_what_if

from ..jobs import find_job
from ..loading import run_results
from ..owners import Owner
from ..runs import Run
from ..state import AppState
from ..trace_text import WhatIfView
from .common import READ_ONLY, Ctx, RunDep, RunIdArg, app_state, engine, owner
from .job import JobIdArg

MAX_ITERATIONS = 20  # a result stays small; the CLI's --json lists every iteration
MAX_CHANGES = 8

ChangesArg = Annotated[
    list[str],
    Field(
        max_length=MAX_CHANGES,
        description="KIND:TEXT=FACTOR each, TEXT a plain name part: gpu:gemm=0.5 (kernels "
        "twice as fast), op:aten::mm=0.5 (an operator's kernels), host:DataLoader=0 (host "
        "spans removed; 0-1 keeps that share), async:aten::to=0.5 (the calls stop waiting, "
        "their copies take that share), graph:Layer=0 (host work removed, launches kept), "
        "overlap:AllReduce=0 (nothing waits for those kernels), warmup (warm-up dropped). "
        "Empty: the identity replay only.",
    ),
]


JobChangesArg = Annotated[
    list[str],
    Field(
        max_length=MAX_CHANGES,
        description="As what_if's changes; rank3@gpu:gemm=0.5 changes rank 3 only. Empty: "
        "the joint identity replay only.",
    ),
]


class WhatIfResult(BaseModel):
    run_id: str
    iterations_total: int = Field(description="iterations replayed; at most 20 are listed")
    what_if: WhatIfView


def predict(st: AppState, run: Run, changes: list[str]) -> WhatIfResult:
    found = replay_what_if(run_results(st, run).model, changes)
    total = len(found.iterations)
    listed = found.model_copy(update={"iterations": found.iterations[:MAX_ITERATIONS]})
    return WhatIfResult(
        run_id=run.id, iterations_total=total, what_if=WhatIfView.model_validate(listed)
    )


class JobWhatIfResult(BaseModel):
    job_id: str
    what_if: JobWhatIf


def predict_job(st: AppState, job_id: str, who: Owner, changes: list[str]) -> JobWhatIfResult:
    """The job's ranks (their runs, as load_job made them) replayed together."""
    _, record = find_job(st, job_id, who)
    models = {}
    for rank in record.ranks:
        if rank.run_id is None:
            continue
        models[rank.rank] = run_results(st, st.runs.get(rank.run_id, who)).model
    if len(models) < 2:
        raise ChangeError(
            f"job {job_id} has fewer than two ranks with a run (failed ranks, or load_job "
            "with until='none'): call load_job again with until='loaded'"
        )
    return JobWhatIfResult(job_id=job_id, what_if=job_what_if(models, changes))


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="What if", annotations=READ_ONLY)
    async def what_if(
        run_id: RunIdArg,
        ctx: Ctx,
        run: RunDep,
        changes: ChangesArg = [],  # noqa: B006
    ) -> WhatIfResult:
        """Replay the run's trace: replay error, critical path, the step after each change and
        all together. Test a fix before recommending it."""
        return await engine(predict, app_state(ctx), run, list(changes))

    @mcp.tool(name="job_what_if", title="What if, for a job", annotations=READ_ONLY)
    async def job_what_if_tool(
        job_id: JobIdArg,
        ctx: Ctx,
        changes: JobChangesArg = [],  # noqa: B006
    ) -> JobWhatIfResult:
        """Replay a job's ranks together (a collective ends when the last rank arrives): the
        step after each change; per rank its replay error and times last."""
        return await engine(predict_job, app_state(ctx), job_id, owner(ctx), list(changes))
