"""Category data and the analysis of one category."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from rooflens.analyzers.categories.run import SYSTEM_ANALYSES, analyze
from rooflens.analyzers.findings.drafts import draft_findings
from rooflens.analyzers.prepare.manifest import read_manifest
from rooflens.analyzers.prepare.run import prepare_run
from rooflens.server import results as r
from rooflens.server.loading import engine_data
from rooflens.server.runs import LOADED, PREPARED, Run
from rooflens.server.state import AppState
from rooflens.server.tools.common import (
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


def analysable(name: str, tier: str) -> bool:
    return name in SYSTEM_ANALYSES or tier == "compute_kernel"


def prepare(st: AppState, run: Run) -> r.PrepareResult:
    run.require(LOADED, "load_trace")
    data = engine_data(st, run)
    if data.platform is None:
        raise ToolError(
            f"{run.id} has no platform, and category data needs one; call load_trace(path, "
            "platform=...) with a name from list_platforms, or platform_file"
        )
    folder = st.policy.folder_without_links(run.folder)
    manifest = prepare_run(data.model, data.report, data.platform, folder, str(run.trace_path))
    run.mark(PREPARED)
    return r.PrepareResult(
        run_id=run.id,
        categories=[
            r.CategorySummary(
                name=c.name,
                display_name=c.display_name,
                tier=str(c.tier),
                ops_count=c.ops_count,
                gpu_kernel_time_ms=c.gpu_kernel_time_ms,
                analysable=analysable(c.name, str(c.tier)),
            )
            for c in manifest.categories
        ],
        gpu_idle_percent=manifest.gpu_utilization.idle_time_percent,
        resources=[f"rooflens://runs/{run.id}/manifest"],
    )


def briefs(run: Run, key: str) -> list[r.FindingBrief]:
    """Rank, title and mid impact of the findings the analysis produced (from the draft)."""
    out = []
    for card in draft_findings(run.folder, key).cards[:MAX_BRIEFS]:
        mid = dict(card.impact.attrs).get("mid") if card.impact else None
        try:
            value = float(mid) if mid not in (None, "null") else None
        except ValueError:
            value = None
        out.append(r.FindingBrief(rank=card.number, title=card.title, impact_mid_percent=value))
    return out


def analyse(st: AppState, run: Run, key: str) -> r.AnalysisResult:
    manifest = read_manifest(run.folder)
    entry = next(c for c in manifest.categories if c.name == key) if manifest else None
    if entry is None or not analysable(entry.name, str(entry.tier)):
        raise ToolError(
            f"{key} is listed for information only and has no analysis; analysable categories "
            "are marked analysable by prepare_category_data"
        )
    result = analyze(st.policy.folder_without_links(run.folder), key)
    done = [  # kernel fusion may have run first, on the way
        f"analysed:{c.name}"
        for c in manifest.categories
        if (run.folder / "category_data" / f"{c.name}_metrics.json").is_file()
    ]
    run.mark(*done)
    return r.AnalysisResult(
        run_id=run.id,
        category=key,
        status=result.status,
        findings=briefs(run, key),
        resources=[f"rooflens://runs/{run.id}/metrics/{key}"],
    )


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Prepare category data", annotations=WRITES_RUN)
    async def prepare_category_data(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.PrepareResult:
        """Split the run's operations into categories (category_data/, metadata/) and list
        them with their GPU time. Next: run_category_analysis for each analysable one."""
        return await engine(prepare, app_state(ctx), run)

    @mcp.tool(title="Analyse a category", annotations=WRITES_RUN)
    async def run_category_analysis(
        run_id: RunIdArg, category: CategoryArg, ctx: Ctx, run: RunDep, key: CategoryDep
    ) -> r.AnalysisResult:
        """Score one category against the roofline (or analyse a system category) and write
        its metrics. Next: draft_findings for the same category."""
        return await engine(analyse, app_state(ctx), run, key)
