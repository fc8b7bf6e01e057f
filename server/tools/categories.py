"""Category data and the analysis of one category."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rooflens.analyzers.findings.contract.contract import Findings
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.analyzers.pipeline.steps import NotAnalysable

from .. import results as r
from ..loading import pipeline
from ..runs import Run
from ..state import AppState
from .common import (
    WRITES_RUN,
    CategoryArg,
    CategoryDep,
    Ctx,
    RunDep,
    RunIdArg,
    app_state,
    engine,
)

MAX_BRIEFS = 10


def prepare(st: AppState, run: Run) -> r.PrepareResult:
    steps = pipeline(st, run)
    data = steps.prepare()
    analysable = set(steps.analysable())
    manifest = data.manifest
    return r.PrepareResult(
        run_id=run.id,
        warnings=[r.HealthNote.of(w) for w in steps.own_warnings()],
        categories=[
            r.CategorySummary(
                name=c.name,
                display_name=c.display_name,
                tier=str(c.tier),
                ops_count=c.ops_count,
                gpu_kernel_time_ms=c.gpu_kernel_time_ms,
                analysable=c.name in analysable,
            )
            for c in manifest.categories
        ],
        gpu_idle_percent=manifest.gpu_utilization.idle_time_percent,
        comparison_scope=manifest.comparison_scope,
        resources=[f"rooflens://runs/{run.id}/manifest"],
    )


def briefs(found: Findings) -> list[r.FindingBrief]:
    """Rank, title and mid impact of the findings the analysis produced (from the draft)."""
    out = []
    for card in found.cards[:MAX_BRIEFS]:
        mid = card.impact.attr("mid") if card.impact else None
        try:
            value = float(mid) if mid not in (None, "null") else None
        except ValueError:
            value = None
        out.append(r.FindingBrief(rank=card.number, title=card.title, impact_mid_percent=value))
    return out


def analyze(st: AppState, run: Run, key: str) -> r.AnalysisResult:
    try:
        metrics = pipeline(st, run).analyze(key)
    except NotAnalysable as exc:
        raise ToolError(
            f"{exc}; the others are listed for information only (prepare_category_data marks "
            "the analysable ones)"
        ) from None
    return r.AnalysisResult(
        run_id=run.id,
        category=key,
        status=str(metrics.status),
        findings=briefs(draft_findings(key, metrics)),
        resources=[f"rooflens://runs/{run.id}/metrics/{key}"],
    )


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Prepare category data", annotations=WRITES_RUN)
    async def prepare_category_data(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.PrepareResult:
        """The run's categories with their GPU time. Next: run_category_analysis for each
        analysable one."""
        return await engine(prepare, app_state(ctx), run)

    @mcp.tool(title="Analyse a category", annotations=WRITES_RUN)
    async def run_category_analysis(
        run_id: RunIdArg, category: CategoryArg, ctx: Ctx, run: RunDep, key: CategoryDep
    ) -> r.AnalysisResult:
        """Analyse one category (roofline or system) and write its metrics. Next: draft_findings."""
        return await engine(analyze, app_state(ctx), run, key)
