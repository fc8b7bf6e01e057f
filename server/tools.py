"""The MCP tools: each validates its arguments, calls the engine off the event loop, and returns
a bounded pydantic model. Errors the model can fix are `ToolError`s saying what to do next."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from rooflens.analyzers.categories.run import SYSTEM_ANALYSES, analyze
from rooflens.analyzers.findings import drafts, priorities, submission, validate
from rooflens.analyzers.findings.model_info import write_model_identification
from rooflens.analyzers.findings.plot import render_plot
from rooflens.analyzers.findings.report import write_report as write_analysis
from rooflens.analyzers.findings.validate_report import validate_report as check_report
from rooflens.analyzers.findings.validate_run import validate_run as check_run
from rooflens.analyzers.perf.platforms import PlatformFileError, UnknownPlatform, platform_table
from rooflens.analyzers.prepare.run import prepare_run
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage, write_report
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.inspect import Inspection
from rooflens.analyzers.trace.inspect import inspect_trace as engine_inspect
from rooflens.analyzers.trace.open_trace import AUTO, open_trace
from rooflens.server import tool_models as m
from rooflens.server.cli_report import choose_platform
from rooflens.server.paths import PathRefused
from rooflens.server.runs import (
    AGGREGATED,
    ANALYSED,
    LOADED,
    PREPARED,
    REPORTED,
    AppState,
    EngineData,
    Run,
)

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
WRITES_RUN = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DRAFT_CHARS = 12000
SORT_DEFAULT = "Kernel Time (µs)_sum"
T = TypeVar("T")

Ctx = Context[AppState]
Limit = Annotated[int, Field(ge=1, le=200, description="rows to return")]
Offset = Annotated[int, Field(ge=0, description="rows to skip")]

NEXT_STEP = {
    TraceError: "pass a PyTorch profiler trace (.json or .json.gz)",
    PathRefused: "pass a path inside the allowed directories",
    UnknownPlatform: "call list_platforms for the known names, or pass platform_file",
    PlatformFileError: "fix the platform file or pass a catalogue platform name",
    submission.SubmissionError: "fix every listed problem and submit again",
    FileNotFoundError: "run the earlier workflow steps first",
}


async def engine(fn: Callable[..., T], *args: Any) -> T:
    """Run `fn` on a worker thread; engine errors become ToolErrors with the next step."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))
    except ToolError:
        raise
    except tuple(NEXT_STEP) as exc:
        hint = next(h for t, h in NEXT_STEP.items() if isinstance(exc, t))
        raise ToolError(f"{exc}; {hint}") from exc


def state(ctx: Ctx) -> AppState:
    return ctx.request_context.lifespan_context


def problems(items: list[Any]) -> list[m.ProblemModel]:
    return [m.ProblemModel(rule=p.rule, line=p.line, message=p.message) for p in items]


def known_category(run: Run, category: str) -> None:
    manifest = run.out_dir / "category_data" / "category_manifest.json"
    names = [c["name"] for c in json.loads(manifest.read_text())["categories"]]
    if category not in names:
        raise ToolError(f"unknown category {category!r} for {run.id}; known: {', '.join(names)}")


MAX_TRACE_ENV = "ROOFLENS_MAX_TRACE_MB"
DEFAULT_MAX_TRACE_MB = 4096


def check_size(trace: Path) -> None:
    """Refuse a trace file larger than the configured limit before reading it."""
    limit_mb = float(os.environ.get(MAX_TRACE_ENV, DEFAULT_MAX_TRACE_MB))
    size_mb = trace.stat().st_size / 2**20
    if size_mb > limit_mb:
        raise ToolError(
            f"{trace.name} is {size_mb:.0f} MB, over the {limit_mb:.0f} MB limit of this server "
            f"({MAX_TRACE_ENV}); profile fewer steps, or raise the limit when starting the server"
        )


def do_load(
    st: AppState,
    path: str,
    platform: str | None,
    platform_file: str | None,
    capture_folder: str | None = None,
):
    trace = st.policy.resolve(path, must_exist=True)
    check_size(trace)
    pfile = str(st.policy.resolve(platform_file, must_exist=True)) if platform_file else None
    captures = str(st.policy.resolve(capture_folder, must_exist=True)) if capture_folder else AUTO
    model = open_trace(trace, captures=captures, allow=st.policy.contains)
    health = assess(model)
    chosen, source = choose_platform(platform, pfile, health.gpu)
    report = build_report(model, chosen)
    run = st.runs.new_run(trace, chosen.name if chosen else None, captures)
    run.out_dir.mkdir(parents=True, exist_ok=True)
    files = write_report(report, run.out_dir, trace.name, health.gpu.model)
    st.runs.keep(run.id, EngineData(model, report, chosen))
    run.mark(LOADED)
    coverage = roofline_coverage(report)
    return m.LoadResult(
        run_id=run.id,
        platform=run.platform,
        platform_source=source,
        gpu=health.gpu.model,
        gpu_utilisation=[
            m.GpuRow(type=r["type"], time_ms=r["time ms"], percent=r["percent"])
            for r in report.timeline.pooled.rows()
        ],
        health_warnings=[m.Warning_(**w.model_dump()) for w in health.warnings],
        roofline_coverage_percent=None if coverage is None else round(coverage * 100, 2),
        notes=list(report.notes),
        output_dir=str(run.out_dir),
        csv_folder=str(files.csv_folder),
        xlsx=str(files.xlsx),
        resources=[
            f"rooflens://runs/{run.id}/tables/unified_perf_summary",
            f"rooflens://runs/{run.id}/tables/gpu_timeline",
            f"rooflens://runs/{run.id}/workbook",
        ],
    )


def do_prepare(st: AppState, run: Run) -> m.PrepareResult:
    data = st.runs.data(run)
    if data.platform is None:
        raise ToolError(
            f"{run.id} has no platform, and category data needs one; call "
            "load_trace(path, platform=...) with a name from list_platforms"
        )
    manifest = prepare_run(data.model, data.report, data.platform, run.out_dir, str(run.trace_path))
    run.mark(PREPARED)
    return m.PrepareResult(
        run_id=run.id,
        category_data=str(run.out_dir / "category_data"),
        categories=[
            m.CategorySummary(
                name=c.name,
                tier=str(c.tier.value if hasattr(c.tier, "value") else c.tier),
                ops_count=c.ops_count,
                gpu_kernel_time_ms=c.gpu_kernel_time_ms,
                analysable=c.name in SYSTEM_ANALYSES or "compute" in str(c.tier),
            )
            for c in manifest.categories
        ],
    )


def do_analyse(run: Run, category: str) -> m.AnalysisResultModel:
    result = analyze(run.out_dir, category)
    run.mark(ANALYSED)
    return m.AnalysisResultModel(
        run_id=run.id,
        category=category,
        status=result.status,
        findings=result.findings,
        metrics_file=str(run.out_dir / "category_data" / f"{category}_metrics.json"),
    )


def do_aggregate(run: Run) -> m.AggregateResult:
    data = priorities.generate_priority_data(run.out_dir)
    path = priorities.write_priority_data(run.out_dir, data)
    run.mark(AGGREGATED)
    return m.AggregateResult(
        run_id=run.id,
        path=str(path),
        baseline_ms=data.baseline_ms,
        priorities=[
            m.PriorityRow(
                rank=p.rank,
                category=p.category,
                display_name=p.display_name,
                impact_score=p.impact_score,
            )
            for p in data.priorities
        ],
        failed_categories=[
            f"{f.category}: {f.status} ({f.message})" for f in data.failed_categories
        ],
    )


def do_compose(run: Run) -> m.ReportResult:
    identity = write_model_identification(run.out_dir)
    name = identity.model if identity else "Unidentified model"
    plot = render_plot(run.out_dir, f"{name} on {run.platform} — Performance Breakdown")
    path = write_analysis(run.out_dir)
    run.mark(REPORTED)
    return m.ReportResult(
        run_id=run.id,
        report=str(path),
        plot=str(plot.path) if plot.path else None,
        model=identity.model if identity else None,
        problems=problems(check_report(run.out_dir)),
        resources=[
            f"rooflens://runs/{run.id}/report",
            f"rooflens://runs/{run.id}/plot",
            f"rooflens://runs/{run.id}/priorities",
        ],
    )


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="List platforms", annotations=READ_ONLY)
    async def list_platforms() -> m.PlatformList:
        """The GPU platforms of the catalogue, with the roofline figures each one uses."""
        return m.PlatformList(platforms=platform_table())

    @mcp.tool(title="Inspect a trace", annotations=READ_ONLY)
    async def inspect_trace(path: str, ctx: Ctx) -> Inspection:
        """Load a trace and report its GPU timeline and health, without starting a run."""
        resolve = functools.partial(state(ctx).policy.resolve, must_exist=True)
        allow = state(ctx).policy.contains
        return await engine(lambda: engine_inspect(resolve(path), allow=allow))

    @mcp.tool(title="Load a trace", annotations=WRITES_RUN)
    async def load_trace(
        path: str,
        ctx: Ctx,
        platform: str | None = None,
        platform_file: str | None = None,
        capture_folder: str | None = None,
    ) -> m.LoadResult:
        """Start a run: load a PyTorch profiler trace, build the perf report (CSVs + xlsx).

        Omit `platform` to use the one the trace suggests. For a CUDA/HIP-graph replay,
        `capture_folder` holds the graph-capture traces (default: capture_traces/ beside
        the trace). Next: prepare_category_data."""
        return await engine(do_load, state(ctx), path, platform, platform_file, capture_folder)

    @mcp.tool(title="Prepare category data", annotations=WRITES_RUN)
    async def prepare_category_data(run_id: str, ctx: Ctx) -> m.PrepareResult:
        """Split the run's operations into categories and write category_data/."""
        run = state(ctx).runs.get(run_id)
        run.require(LOADED, "load_trace")
        return await engine(do_prepare, state(ctx), run)

    @mcp.tool(title="Analyse a category", annotations=WRITES_RUN)
    async def run_category_analysis(run_id: str, category: str, ctx: Ctx) -> m.AnalysisResultModel:
        """Analyse one category of a prepared run and write its metrics JSON."""
        run = state(ctx).runs.get(run_id)
        run.require(PREPARED, "prepare_category_data")
        known_category(run, category)
        return await engine(do_analyse, run, category)

    @mcp.tool(title="Draft findings", annotations=WRITES_RUN)
    async def draft_findings(run_id: str, category: str, ctx: Ctx) -> m.DraftResult:
        """Draft a category's findings from its metrics; rewrite the prose with submit_findings."""
        run = state(ctx).runs.get(run_id)
        run.require(ANALYSED, "run_category_analysis")
        path = await engine(drafts.write_draft, run.out_dir, category)
        text = path.read_text(encoding="utf-8")
        return m.DraftResult(
            run_id=run.id,
            category=category,
            path=str(path),
            text=text[:DRAFT_CHARS],
            truncated=len(text) > DRAFT_CHARS,
        )

    @mcp.tool(title="Submit findings", annotations=WRITES_RUN)
    async def submit_findings(
        run_id: str, category: str, items: list[submission.PItemProse], ctx: Ctx
    ) -> m.SubmitResult:
        """Replace the prose of drafted P-items (by rank); the result must validate."""
        run = state(ctx).runs.get(run_id)
        run.require(ANALYSED, "run_category_analysis")
        path = await engine(submission.submit_structured, run.out_dir, category, items)
        return m.SubmitResult(run_id=run.id, category=category, path=str(path))

    @mcp.tool(title="Validate findings", annotations=READ_ONLY)
    async def validate_findings(run_id: str, category: str, ctx: Ctx) -> m.ValidationResult:
        """Check a category's findings file against the findings rules."""
        run = state(ctx).runs.get(run_id)
        path = drafts.findings_path(run.out_dir, category)
        if not path.is_file():
            raise ToolError(f"no findings for {category} in {run.id}; call draft_findings first")
        found = await engine(validate.validate_findings_file, path, drafts.tier_for(category))
        return m.ValidationResult(
            run_id=run.id, target=str(path), valid=not found, problems=problems(found)
        )

    @mcp.tool(title="Aggregate findings", annotations=WRITES_RUN)
    async def aggregate_findings(run_id: str, ctx: Ctx) -> m.AggregateResult:
        """Rank the analysed categories by estimated saving and write the priority data."""
        run = state(ctx).runs.get(run_id)
        run.require(ANALYSED, "run_category_analysis")
        return await engine(do_aggregate, run)

    @mcp.tool(title="Validate run", annotations=READ_ONLY)
    async def validate_run(run_id: str, ctx: Ctx) -> m.RunValidationResult:
        """Cross-check the run's time, coverage, priority and efficiency figures."""
        run = state(ctx).runs.get(run_id)
        run.require(AGGREGATED, "aggregate_findings")
        found = await engine(check_run, run.out_dir)
        checks = [
            m.RunCheck(name=name, status=str(c.status), messages=list(c.messages))
            for name, c in found
        ]
        return m.RunValidationResult(run_id=run.id, checks=checks)

    @mcp.tool(title="Compose report", annotations=WRITES_RUN)
    async def compose_report(run_id: str, ctx: Ctx) -> m.ReportResult:
        """Write the plot and analysis.md, and return the report's validation problems."""
        run = state(ctx).runs.get(run_id)
        run.require(AGGREGATED, "aggregate_findings")
        return await engine(do_compose, run)

    @mcp.tool(title="Validate report", annotations=READ_ONLY)
    async def validate_report(run_id: str, ctx: Ctx) -> m.ValidationResult:
        """Check the composed analysis report against the report rules."""
        run = state(ctx).runs.get(run_id)
        run.require(AGGREGATED, "aggregate_findings")
        found = await engine(check_report, run.out_dir)
        return m.ValidationResult(
            run_id=run.id, target=str(run.out_dir), valid=not found, problems=problems(found)
        )

    @mcp.tool(title="Query operations", annotations=READ_ONLY)
    async def query_operations(
        run_id: str,
        ctx: Ctx,
        category: str | None = None,
        name_contains: str | None = None,
        sort_by: str = SORT_DEFAULT,
        limit: Limit = 25,
        offset: Offset = 0,
    ) -> m.OperationsPage:
        """Rows of the run's unified_perf_summary, filtered, sorted (descending) and paged."""
        run = state(ctx).runs.get(run_id)
        run.require(LOADED, "load_trace")
        table = state(ctx).runs.data(run).report.sheets.get("unified_perf_summary")
        if table is None:
            raise ToolError(f"{run.id} has no unified_perf_summary (the trace has no CPU ops)")
        if sort_by not in table.columns:
            raise ToolError(f"unknown sort_by {sort_by!r}; columns: {', '.join(table.columns)}")
        if category is not None:
            table = table[table["op category"] == category]
        if name_contains:
            table = table[table["name"].astype(str).str.contains(name_contains, regex=False)]
        table = table.sort_values(sort_by, ascending=False, kind="stable")
        page = table.iloc[offset : offset + limit]
        rows = page.astype(object).where(page.notna(), None).to_dict(orient="records")
        return m.OperationsPage(
            run_id=run.id,
            total=len(table),
            offset=offset,
            rows=rows,
            has_more=offset + limit < len(table),
        )

    @mcp.tool(title="Full analysis", annotations=WRITES_RUN)
    async def run_full_analysis(
        path: str, ctx: Ctx, platform: str | None = None, capture_folder: str | None = None
    ) -> m.FullAnalysisResult:
        """The deterministic pipeline in one call: load, prepare, analyse every category,
        draft findings, aggregate and compose the report. Reports progress per step."""
        st = state(ctx)
        await ctx.report_progress(0, 5, "loading the trace and building the perf report")
        loaded = await engine(do_load, st, path, platform, None, capture_folder)
        run = st.runs.get(loaded.run_id)
        await ctx.report_progress(1, 5, "preparing the category data")
        prepared = await engine(do_prepare, st, run)
        names = [c.name for c in prepared.categories if c.analysable]
        ordered = [n for n in names if n in SYSTEM_ANALYSES]
        ordered += [n for n in names if n not in SYSTEM_ANALYSES]
        await ctx.report_progress(2, 5, f"analysing {len(ordered)} categories")
        results = [await engine(do_analyse, run, key) for key in ordered]
        await ctx.report_progress(3, 5, "drafting findings and ranking priorities")
        for key in ordered:
            await engine(drafts.write_draft, run.out_dir, key)
        aggregated = await engine(do_aggregate, run)
        await ctx.report_progress(4, 5, "composing the report")
        report = await engine(do_compose, run)
        await ctx.report_progress(5, 5, "done")
        return m.FullAnalysisResult(
            load=loaded, categories=results, priorities=aggregated.priorities, report=report
        )
