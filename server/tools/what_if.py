"""What-if: the run's trace replayed, its critical path, the step after each change."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from rooflens.analyzers.replay.what_if import what_if as replay_what_if

from ..loading import run_results
from ..runs import Run
from ..state import AppState
from ..trace_text import WhatIfView
from .common import READ_ONLY, Ctx, RunDep, RunIdArg, app_state, engine

MAX_ITERATIONS = 20  # a result stays small; the CLI's --json lists every iteration
MAX_CHANGES = 8

ChangesArg = Annotated[
    list[str],
    Field(
        max_length=MAX_CHANGES,
        description="Changes to predict, each KIND:PATTERN=FACTOR: gpu:NAME_PART=0.5 (kernels "
        "whose name contains NAME_PART twice as fast), op:aten::mm=0.5 (an operator's kernels), "
        "host:DataLoader=0 (host spans whose name contains the text removed; 0 to 1 keeps that "
        "share), async:aten::to=0.5 (the calls inside those spans wait no more and what they "
        "launched takes that share of its time: a copy made async and pinned), "
        "graph:DecoderLayer=0 (host work inside those spans removed, launches kept: a CUDA "
        "graph), overlap:AllReduce=0 (other streams stop waiting for those kernels: a "
        "collective overlapped), or warmup (the warm-up iterations dropped). Patterns are "
        "plain text. Empty: the identity replay and the critical path only.",
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


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="What if", annotations=READ_ONLY)
    async def what_if(
        run_id: RunIdArg,
        ctx: Ctx,
        run: RunDep,
        changes: ChangesArg = [],  # noqa: B006
    ) -> WhatIfResult:
        """Replay the run's trace from its recorded durations: the identity replay error, the
        critical path of the median iteration, and the step time predicted after each change
        and after all of them together (one replay), with what becomes critical next. Test a
        fix here before recommending it: a saving off the critical path is no saving."""
        return await engine(predict, app_state(ctx), run, list(changes))
