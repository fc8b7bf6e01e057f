"""The first steps: the platform catalogue, a trace's health, and starting a run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from mcp.server import MCPServer
from pydantic import Field

from rooflens.analyzers.compare.comparison import Comparison
from rooflens.analyzers.compare.what_changed_md import headline
from rooflens.analyzers.perf.platform_choice import platform_warnings
from rooflens.analyzers.perf.platforms import platform_table
from rooflens.analyzers.report.build import PerfReport
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.trace.inspect import Inspection
from rooflens.analyzers.trace.inspect import inspect_trace as engine_inspect
from rooflens.analyzers.trace.open_trace import AUTO
from rooflens.analyzers.trace.read import require_regular_file

from .. import results as r
from ..loading import LoadedRun, LoadRequest, load_run
from ..notify import log_to_client, runs_changed
from ..paths import PathPolicy
from ..trace_text import TraceInspection
from .common import (
    READ_ONLY,
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

MAX_WARNINGS = 12
MAX_NOTES = 6
OutputDirArg = Annotated[
    str | None,
    Field(description="Allowed folder to hold <output_dir>/<run_id>; default the workspace."),
]
CompareWithArg = Annotated[
    str | None,
    Field(description="Trace 2, the reference (path is trace 1, the one to optimise)."),
]
Platform2Arg = Annotated[
    str | None,
    Field(description="Trace 2's platform (compare_with only); omit for its own."),
]
CaptureFolder2Arg = Annotated[
    str | None,
    Field(description="capture_folder of trace 2 (compare_with only)."),
]
FreshArg = Annotated[
    bool,
    Field(description="A new run even if these options were loaded before."),
]


def run_resources(run_id: str, comparative: bool = False) -> list[str]:
    base = f"rooflens://runs/{run_id}"
    found = [f"{base}/tables", f"{base}/tables/unified_perf_summary", f"{base}/workbook"]
    if comparative:  # trace 1's tables with the comparison columns, trace 2's own
        found += [f"{base}/trace1/tables", f"{base}/trace1/tables/diff_stats"]
        found += [f"{base}/trace2/tables", f"{base}/trace2/utilization"]
        found += [f"{base}/trace2/metrics/cpu_idle", f"{base}/trace2/metrics/multi_kernel"]
    return found


def compared_note(comparison: Comparison) -> r.ComparedTraceNote:
    health = comparison.health
    return r.ComparedTraceNote(
        trace=Path(comparison.trace_path).name,
        platform=comparison.platform.name if comparison.platform else None,
        platform_source=comparison.platform_source,
        gpu=health.gpu.model,
        gpu_utilisation=gpu_rows(comparison.report),
        health_warnings=[
            r.HealthNote.of(w)
            for w in [*platform_warnings(health.gpu, comparison.platform), *health.warnings]
        ][:MAX_WARNINGS],
        what_changed=headline(comparison.what_changed),
        comparability_score=comparison.comparability.score,
        comparability=comparison.comparability.reasons,
    )


def gpu_rows(report: PerfReport) -> list[r.GpuRow]:
    return [
        r.GpuRow(type=row["type"], time_ms=row["time ms"], percent=row["percent"])
        for row in report.timeline.pooled.rows()
    ]


def load_result(loaded: LoadedRun) -> r.LoadResult:
    run, data, health = loaded.run, loaded.results, loaded.health
    coverage = roofline_coverage(data.report)
    return r.LoadResult(
        run_id=run.id,
        reused=loaded.reused,
        platform=run.platform,
        platform_source=loaded.platform_source,
        gpu=health.gpu.model,
        gpu_utilisation=gpu_rows(data.report),
        health_warnings=[  # the run's own first: never cut
            r.HealthNote.of(w)
            for w in [*platform_warnings(health.gpu, data.platform), *health.warnings]
        ][:MAX_WARNINGS],
        roofline_coverage_percent=None if coverage is None else round(coverage * 100, 2),
        notes=list(data.report.notes)[:MAX_NOTES],
        output_dir=str(run.folder),
        resources=run_resources(run.id, data.comparison is not None),
        comparison=None if data.comparison is None else compared_note(data.comparison),
    )


def _inspect(
    policy: PathPolicy, path: str, capture_folder: str | None, include_unlinked: bool
) -> Inspection:
    """inspect_trace's work, on a worker thread: the paths checked, then the trace read."""
    trace = require_regular_file(policy.resolve(path, must_exist=True))
    captures = str(policy.resolve(capture_folder, must_exist=True)) if capture_folder else AUTO
    return engine_inspect(
        trace, include_unlinked=include_unlinked, captures=captures, allow=policy.contains
    )


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="List platforms", annotations=READ_ONLY)
    async def list_platforms() -> r.PlatformList:
        """The GPU catalogue and the roofline figures of each platform."""
        return r.PlatformList(platforms=platform_table())

    @mcp.tool(title="Inspect a trace", annotations=READ_ONLY)
    async def inspect_trace(
        path: PathArg,
        ctx: Ctx,
        capture_folder: CaptureFolderArg = None,
        include_unlinked: Annotated[
            bool, Field(description="Also count GPU events whose launch is not in the trace.")
        ] = False,
    ) -> TraceInspection:
        """A trace's health (GPU, what is recorded or missing) and GPU timeline; starts no run."""
        policy = app_state(ctx).policy
        return await engine(_inspect, policy, path, capture_folder, include_unlinked)

    @mcp.tool(title="Load a trace", annotations=WRITES_RUN)
    async def load_trace(
        path: PathArg,
        ctx: Ctx,
        platform: PlatformArg = None,
        platform_file: PlatformFileArg = None,
        capture_folder: CaptureFolderArg = None,
        output_dir: OutputDirArg = None,
        fresh: FreshArg = False,
        compare_with: CompareWithArg = None,
        platform2: Platform2Arg = None,
        capture_folder2: CaptureFolder2Arg = None,
    ) -> r.LoadResult:
        """Start a run (the trace's perf report); with compare_with, a comparative run. The same
        trace and options return the same run. Next: prepare_category_data."""
        request = LoadRequest(
            path, platform, platform_file, capture_folder, output_dir, fresh,
            compare_with=compare_with, platform2=platform2, capture_folder2=capture_folder2,
        )  # fmt: skip
        await ctx.report_progress(0, 1, "reading the trace and building the perf report")
        loaded = await engine(load_run, app_state(ctx), request, owner(ctx))
        await ctx.report_progress(1, 1, "perf report written")
        if not loaded.reused:
            await runs_changed(ctx)
            await log_to_client(ctx, "info", f"{loaded.run.id}: perf report of {path} written")
        return load_result(loaded)
