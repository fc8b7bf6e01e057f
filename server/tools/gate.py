"""The regression gate over two loaded runs: the verdict `rooflens compare --gate` gives."""

from __future__ import annotations

from typing import Annotated

from mcp.server import MCPServer
from pydantic import BaseModel, Field

from rooflens.analyzers.compare.gate import gate_verdict

from ..loading import run_results
from ..owners import Owner
from ..state import AppState
from ..trace_text import GateVerdictView
from .common import READ_ONLY, Ctx, RunIdArg, app_state, engine, owner

GatePctArg = Annotated[
    float,
    Field(
        ge=0,
        le=1000,
        description="Percent slower than the base allowed beyond noise.",
    ),
]


class CompareRunsResult(BaseModel):
    run_id: str
    base_run_id: str
    gate: GateVerdictView


def judge(st: AppState, who: Owner, run_id: str, base_run_id: str, pct: float) -> CompareRunsResult:
    run, base = st.runs.get(run_id, who), st.runs.get(base_run_id, who)
    new_model, base_model = run_results(st, run).model, run_results(st, base).model
    names = (run.record.trace.name, base.record.trace.name)
    verdict = gate_verdict(new_model, base_model, pct, names=names)
    return CompareRunsResult(
        run_id=run.id, base_run_id=base.id, gate=GateVerdictView.model_validate(verdict)
    )


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Regression gate", annotations=READ_ONLY)
    async def compare_runs(
        run_id: RunIdArg,
        base_run_id: Annotated[str, Field(description="The base's run id.")],
        ctx: Ctx,
        gate_pct: GatePctArg = 5.0,
    ) -> CompareRunsResult:
        """Is run_id slower than base_run_id beyond the noise of their steady steps (the
        verdict of `compare --gate`)?"""
        return await engine(judge, app_state(ctx), owner(ctx), run_id, base_run_id, gate_pct)
