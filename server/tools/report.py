"""The model behind the trace, the plot, and the report."""

from __future__ import annotations

import json
from typing import Annotated

import pandas as pd
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.model_info import (
    ModelIdentification,
    module_names,
    op_rows,
)
from rooflens.analyzers.findings.composing.prose import ReportProse
from rooflens.analyzers.findings.validation.analysis_checks import validate_report as check_report
from rooflens.analyzers.pipeline.steps import REPORTED

from .. import results as r
from ..bounded import fit
from ..loading import pipeline
from ..runs import Run
from ..state import AppState
from ..trace_text import IdentificationView
from .common import READ_ONLY, WRITES_RUN, Ctx, RunDep, RunIdArg, app_state
from .common import engine as run_engine
from .findings import validation

MODULES_SHOWN = 60
TOP_OPERATIONS = 20
KERNEL_US = "Kernel Time (µs)_sum"

TitleArg = Annotated[
    str | None,
    Field(
        description="Plot title naming model and platform; default '<model> on <platform> "
        "- Performance Breakdown'."
    ),
]
SummaryArg = Annotated[
    str | None,
    Field(
        description="2-3 plain sentences: where the time goes, the top priorities (no "
        "numbers of your own); default code's."
    ),
]
RecommendationArg = Annotated[
    str | None,
    Field(description="One or two plain sentences: the change to make first, and why."),
]


def plain(value: object) -> object:
    """A table cell as plain JSON: JSON text parsed, NaN as null, tuples as lists."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, float) and value != value:
        return None
    return list(value) if isinstance(value, tuple) else value


def prose_from(summary: str | None, recommendation: str | None) -> ReportProse | None:
    """The model's words for the report, checked; None keeps what code writes."""
    if summary is None and recommendation is None:
        return None
    try:
        return ReportProse(summary=summary, recommendation=recommendation)
    except ValueError as exc:
        raise ToolError(f"{exc}; rewrite it as plain sentences") from None


def top_operations(table: pd.DataFrame | None) -> list[r.OperationBrief]:
    if table is None or KERNEL_US not in table:
        return []
    top = table.sort_values(KERNEL_US, ascending=False, kind="stable").head(TOP_OPERATIONS)
    return [
        r.OperationBrief(
            name=str(row["name"]),
            calls=int(row.get("operation_count") or 0),
            kernel_time_ms=round(float(row[KERNEL_US]) / 1000, 4),
            input_types=plain(row.get("Input type")),
            input_dims=plain(row.get("Input Dims")),
        )
        for _, row in top.iterrows()
        if pd.notna(row[KERNEL_US])
    ]


def identify(st: AppState, run: Run) -> r.ModelIdentificationData:
    steps = pipeline(st, run)
    found = steps.identify()
    if found is None:
        raise ToolError("the run has no operator table (a GPU-only trace): nothing to identify")
    run.mark()
    unified = steps.results.report.sheets.get("unified_perf_summary")
    modules = module_names(op_rows(unified) or [])
    base = r.ModelIdentificationData(
        run_id=run.id,
        identification=found,
        nn_modules=modules[:MODULES_SHOWN],
        nn_modules_total=len(modules),
        operations=[],
    )
    ops, _ = fit(base, "operations", top_operations(unified), st.payload_budget)
    return base.model_copy(update={"operations": ops})


def submit_identity(st: AppState, run: Run, info: ModelIdentification) -> ModelIdentification:
    found = pipeline(st, run).submit_identity(info)
    run.mark()
    return found


def plot(st: AppState, run: Run, title: str | None) -> r.PlotOutcome:
    result = pipeline(st, run).plot(title)
    return r.PlotOutcome(
        run_id=run.id,
        drawn=result.drawn,
        reason=result.reason,
        categories_drawn=list(result.categories_drawn),
        resource=f"rooflens://runs/{run.id}/plot" if result.drawn else None,
    )


def compose(st: AppState, run: Run, prose: ReportProse | None) -> r.ReportResult:
    """The report; the plot is drawn only when the model has not drawn one (its title stays)."""
    pipeline(st, run).compose(prose)
    return check_composed(st, run)


def check_composed(st: AppState, run: Run) -> r.ReportResult:
    """The composed report's validation, as compose_report returns it."""
    steps = pipeline(st, run)
    found = check_report(run.folder)
    problems = [r.ProblemModel(rule=p.rule, line=p.line, message=p.message) for p in found]
    identity = steps.identify()
    base = r.ReportResult(
        run_id=run.id,
        model=identity.model if identity else None,
        plot_drawn=steps.has_plot(),
        valid=not found,
        problems=[],
        resources=[f"rooflens://runs/{run.id}/{k}" for k in ("report", "plot", "priorities")],
        files=[
            str(run.folder / name)
            for name in (layout.REPORT_HTML, layout.ANNOTATED_TRACE)
            if (run.folder / name).is_file()
        ],
    )
    shown, _ = fit(base, "problems", problems, st.payload_budget)
    return base.model_copy(update={"problems": shown})


def check(st: AppState, run: Run) -> r.ValidationResult:
    pipeline(st, run).require(REPORTED)
    return validation(st, run.id, "analysis.md", check_report(run.folder))


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Model identification data", annotations=WRITES_RUN)
    async def get_model_identification_data(
        run_id: RunIdArg, ctx: Ctx, run: RunDep
    ) -> r.ModelIdentificationData:
        """The model as the trace shows it: module names, top operations, code's guess."""
        return await run_engine(identify, app_state(ctx), run)

    @mcp.tool(title="Submit model info", annotations=WRITES_RUN)
    async def submit_model_info(
        run_id: RunIdArg,
        info: Annotated[
            ModelIdentification,
            Field(description="Your verdict ('Cannot be inferred from trace' when unsure)"),
        ],
        ctx: Ctx,
        run: RunDep,
    ) -> IdentificationView:
        """Record the model's identity as you judge it."""
        return await run_engine(submit_identity, app_state(ctx), run, info)

    @mcp.tool(title="Render performance plot", annotations=WRITES_RUN)
    async def render_performance_plot(
        run_id: RunIdArg, ctx: Ctx, run: RunDep, title: TitleArg = None
    ) -> r.PlotOutcome:
        """Draw GPU time and estimated savings per category; compose_report keeps it."""
        return await run_engine(plot, app_state(ctx), run, title)

    @mcp.tool(title="Compose report", annotations=WRITES_RUN)
    async def compose_report(
        run_id: RunIdArg,
        ctx: Ctx,
        run: RunDep,
        executive_summary: SummaryArg = None,
        recommendation: RecommendationArg = None,
    ) -> r.ReportResult:
        """Write analysis.md: your summary and recommendation, code's cards, tables and plot;
        returns its problems."""
        prose = prose_from(executive_summary, recommendation)
        return await run_engine(compose, app_state(ctx), run, prose)

    @mcp.tool(title="Validate report", annotations=READ_ONLY)
    async def validate_report(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.ValidationResult:
        """Check analysis.md against the report rules."""
        return await run_engine(check, app_state(ctx), run)
