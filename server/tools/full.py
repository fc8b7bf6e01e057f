"""Every deterministic step in one call, with progress per step."""

from __future__ import annotations

import anyio.from_thread
from mcp.server import MCPServer

from rooflens.analyzers.pipeline.steps import REPORTED

from .. import results as r
from ..loading import LoadRequest, load_run, pipeline
from ..notify import log_to_client, runs_changed
from .common import (
    WRITES_RUN,
    CaptureFolderArg,
    Ctx,
    PathArg,
    PlatformArg,
    PlatformFileArg,
    app_state,
    engine,
    owner,
)
from .findings import priority_rows
from .load import (
    CaptureFolder2Arg,
    CompareWithArg,
    FreshArg,
    OutputDirArg,
    Platform2Arg,
    compared_note,
    run_resources,
)
from .report import RecommendationArg, SummaryArg, check_composed, prose_from


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Full analysis", annotations=WRITES_RUN)
    async def run_full_analysis(
        path: PathArg,
        ctx: Ctx,
        platform: PlatformArg = None,
        platform_file: PlatformFileArg = None,
        capture_folder: CaptureFolderArg = None,
        output_dir: OutputDirArg = None,
        fresh: FreshArg = False,
        executive_summary: SummaryArg = None,
        recommendation: RecommendationArg = None,
        compare_with: CompareWithArg = None,
        platform2: Platform2Arg = None,
        capture_folder2: CaptureFolder2Arg = None,
    ) -> r.FullAnalysisResult:
        """Every deterministic step in one call, load_trace's arguments to the report; code's
        prose unless you pass a summary."""
        st = app_state(ctx)
        prose = prose_from(executive_summary, recommendation)
        request = LoadRequest(
            path, platform, platform_file, capture_folder, output_dir, fresh, whole=True,
            compare_with=compare_with, platform2=platform2, capture_folder2=capture_folder2,
        )  # fmt: skip
        ticks = [0]

        def tick(message: str) -> None:  # called by the pipeline on its worker thread
            ticks[0] += 1
            anyio.from_thread.run(ctx.report_progress, ticks[0], None, message)

        await ctx.report_progress(0, None, "reading the trace and building the perf report")
        loaded = await engine(load_run, st, request, owner(ctx))
        run = loaded.run
        if not loaded.reused:
            await runs_changed(ctx)
        steps = await engine(pipeline, st, run)
        await engine(steps.run, REPORTED, tick, prose)
        await ctx.report_progress(ticks[0] + 1, ticks[0] + 1, "done")
        failed = [k for k, m in steps.results.metrics.items() if m.status == "ERROR"]
        for key in failed:
            await log_to_client(ctx, "warning", f"{run.id}: the {key} analysis failed")
        composed = await engine(check_composed, st, run)
        compared = steps.results.comparison
        return r.FullAnalysisResult(
            run_id=run.id,
            reused=loaded.reused,
            platform=run.platform,
            warnings=[r.HealthNote.of(w) for w in steps.own_warnings()],
            categories=steps.analysable(),
            failed=failed,
            priorities=priority_rows(steps.priorities())[:10],
            report_valid=composed.valid,
            resources=[*composed.resources, *run_resources(run.id, compared is not None)],
            comparison=None if compared is None else compared_note(compared),
        )
