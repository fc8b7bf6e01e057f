"""Every deterministic step in one call, with progress per step."""

from __future__ import annotations

from mcp.server import MCPServer

from rooflens.analyzers.categories.run import SYSTEM_ANALYSES
from rooflens.server import results as r
from rooflens.server.loading import LoadRequest, load_run
from rooflens.server.notify import log_to_client, runs_changed
from rooflens.server.tools import categories, findings, report
from rooflens.server.tools.common import (
    WRITES_RUN,
    CaptureFolderArg,
    Ctx,
    PathArg,
    PlatformArg,
    PlatformFileArg,
    Strict,
    app_state,
    engine,
    owner,
)
from rooflens.server.tools.load import FreshArg, OutputDirArg
from rooflens.server.tools.report import RecommendationArg, SummaryArg

STEPS = 5


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Full analysis", annotations=WRITES_RUN)
    async def run_full_analysis(
        path: PathArg,
        ctx: Ctx,
        strict: Strict,
        platform: PlatformArg = None,
        platform_file: PlatformFileArg = None,
        capture_folder: CaptureFolderArg = None,
        output_dir: OutputDirArg = None,
        fresh: FreshArg = False,
        executive_summary: SummaryArg = None,
        recommendation: RecommendationArg = None,
    ) -> r.FullAnalysisResult:
        """The whole deterministic pipeline in one call: load (or reuse) the run, prepare,
        analyse every category, draft findings, rank priorities, compose the report. Takes
        load_trace's arguments; the prose stays code's unless you pass a summary."""
        st = app_state(ctx)
        prose = report.prose_from(executive_summary, recommendation)
        request = LoadRequest(path, platform, platform_file, capture_folder, output_dir, fresh)
        await ctx.report_progress(0, STEPS, "reading the trace and building the perf report")
        loaded = await engine(load_run, st, request, owner(ctx))
        run = loaded.run
        if not loaded.reused:
            await runs_changed(ctx)
        await ctx.report_progress(1, STEPS, "preparing the category data")
        prepared = await engine(categories.prepare, st, run)
        names = [c.name for c in prepared.categories if c.analysable]
        ordered = [n for n in names if n in SYSTEM_ANALYSES]
        ordered += [n for n in names if n not in SYSTEM_ANALYSES]
        await ctx.report_progress(2, STEPS, f"analysing {len(ordered)} categories")
        failed = []
        for key in ordered:
            result = await engine(categories.analyse, st, run, key)
            if result.status == "ERROR":
                failed.append(key)
                await log_to_client(ctx, "warning", f"{run.id}: the {key} analysis failed")
        await ctx.report_progress(3, STEPS, "drafting findings and ranking priorities")
        for key in ordered:
            await engine(findings.draft, st, run, key)
        aggregated = await engine(findings.aggregate, st, run)
        await ctx.report_progress(4, STEPS, "composing the report")
        composed = await engine(report.compose, st, run, prose)
        await ctx.report_progress(5, STEPS, "done")
        return r.FullAnalysisResult(
            run_id=run.id,
            reused=loaded.reused,
            platform=run.platform,
            categories=ordered,
            failed=failed,
            priorities=aggregated.priorities[:10],
            report_valid=composed.valid,
            resources=[*composed.resources, f"rooflens://runs/{run.id}/tables"],
        )
