"""Reading the run's operations and perf-report tables a page at a time."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pandas as pd
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from rooflens.analyzers.prepare.categories import (
    CategoryLookupError,
    find_category,
    normalise_category,
)
from rooflens.server import results as r
from rooflens.server.bounded import fit
from rooflens.server.loading import run_results
from rooflens.server.runs import Run
from rooflens.server.state import AppState
from rooflens.server.tools.common import (
    READ_ONLY,
    Ctx,
    LimitArg,
    OffsetArg,
    RunDep,
    RunIdArg,
    app_state,
    as_tool_error,
    engine,
)

UNIFIED = "unified_perf_summary"
SORT_DEFAULT = "Kernel Time (µs)_sum"
KERNEL = "kernel"  # derived: the name of the op's longest-running kernel, shortened
KERNEL_CHARS = 80
COMPACT = (
    "name",
    "op category",
    "operation_count",
    "Kernel Time (µs)_sum",
    "speedup (trace2/trace1)",  # trace 1 of a comparative run only
    "lca_total_kernel_time_trace2_us",  # likewise
    "Percentage (%)",
    "Pct Roofline_mean",
    "Roofline Bound",
    KERNEL,
)

CategoryFilterArg = Annotated[
    str | None,
    Field(
        description="Only this category, by key or display name, any case (gemm, GEMM, "
        "conv_bwd, CONV_bwd)."
    ),
]
NameArg = Annotated[str | None, Field(description="Only operations whose name contains this text.")]
TraceArg = Annotated[
    Literal[1, 2],
    Field(
        description="Which trace of a comparative run: 1, the one being optimised (its rows "
        "carry the comparison columns: speedup (trace2/trace1), delta_us and trace 2's time "
        "under the same shared operator), or 2, the reference (its own report). A standalone "
        "run has only trace 1."
    ),
]
SortArg = Annotated[
    str, Field(description="Column to sort by, largest first (any column of the table).")
]
ColumnsArg = Annotated[
    list[str] | None,
    Field(
        description="Columns to return (names as in list_tables, plus 'kernel'); omit for "
        "the compact set: " + ", ".join(COMPACT) + ". call_stack_full and "
        "kernel_details_summary are long."
    ),
]


def _kernel(details: Any) -> str | None:
    if not isinstance(details, list) or not details:
        return None
    longest = max(details, key=lambda k: k.get("total_duration_us") or 0)
    name = str(longest.get("name") or "")
    return name if len(name) <= KERNEL_CHARS else name[: KERNEL_CHARS - 3] + "..."


def _category_filter(table: pd.DataFrame, category: str) -> pd.Series:
    values = [v for v in table["op category"].dropna().unique()]
    pairs = [normalise_category(v) for v in values]
    try:
        key = find_category(category, pairs)
    except CategoryLookupError as exc:
        raise as_tool_error(exc) from exc
    displays = {d for k, d in pairs if k == key}
    return table["op category"].isin(displays)


def query(
    st: AppState,
    run: Run,
    category: str | None,
    name_contains: str | None,
    sort_by: str,
    columns: list[str] | None,
    limit: int,
    offset: int,
    trace: int = 1,
) -> r.OperationsPage:
    table = sheets_of(st, run, trace).get(UNIFIED)
    if table is None:
        raise ToolError(f"{run.id} has no {UNIFIED} (the trace has no CPU operators)")
    known = [*table.columns, KERNEL]
    wanted = list(columns) if columns else [c for c in COMPACT if c in known]
    unknown = [c for c in [*wanted, sort_by] if c not in known]
    if unknown:
        raise ToolError(
            f"unknown column(s) {', '.join(map(repr, unknown))}; the columns are: "
            f"{', '.join(known)}"
        )
    if sort_by == KERNEL:
        raise ToolError("sort by a table column, not the derived 'kernel'")
    if category is not None:
        table = table[_category_filter(table, category)]
    if name_contains:
        table = table[table["name"].astype(str).str.contains(name_contains, regex=False)]
    table = table.sort_values(sort_by, ascending=False, kind="stable", na_position="last")
    page = table.iloc[offset : offset + limit]
    if KERNEL in wanted:
        page = page.assign(kernel=page["kernel_details_summary"].map(_kernel))
    rows = json.loads(page[wanted].to_json(orient="records", force_ascii=False))
    base = r.OperationsPage(
        run_id=run.id,
        total=len(table),
        offset=offset,
        columns=wanted,
        rows=[],
        has_more=False,
        next_offset=None,
    )
    kept, cut = fit(base, "rows", rows, st.payload_budget)
    if not kept and rows:
        raise ToolError("one row is larger than a result may be; ask for fewer columns")
    end = offset + len(kept)
    more = cut or end < len(table)
    return base.model_copy(
        update={"rows": kept, "has_more": more, "next_offset": end if more else None}
    )


def sheets_of(st: AppState, run: Run, trace: int) -> dict[str, pd.DataFrame]:
    """The perf-report tables of trace 1 (with the comparison columns in a comparative run)
    or of trace 2."""
    results = run_results(st, run)
    compared = results.comparison
    if compared is None:
        if trace == 2:
            raise ToolError(
                f"{run.id} compares no traces, so it has no trace 2; call load_trace with "
                "compare_with for a comparative run"
            )
        return results.report.sheets
    return compared.trace1_sheets if trace == 1 else compared.report.sheets


def tables(st: AppState, run: Run) -> r.TableList:
    compared = run_results(st, run).comparison is not None
    where = {1: "trace1/tables", 2: "trace2/tables"} if compared else {1: "tables"}
    infos = [
        r.TableInfo(
            name=name,
            rows=len(frame),
            columns=[str(c) for c in frame.columns],
            resource=f"rooflens://runs/{run.id}/{folder}/{name}",
            trace=trace,
        )
        for trace, folder in where.items()
        for name, frame in sheets_of(st, run, trace).items()
    ]
    base = r.TableList(run_id=run.id, tables=[])
    kept, _ = fit(base, "tables", infos, st.payload_budget)
    return base.model_copy(update={"tables": kept})


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Query operations", annotations=READ_ONLY)
    async def query_operations(
        run_id: RunIdArg,
        ctx: Ctx,
        run: RunDep,
        category: CategoryFilterArg = None,
        name_contains: NameArg = None,
        sort_by: SortArg = SORT_DEFAULT,
        columns: ColumnsArg = None,
        limit: LimitArg = 25,
        offset: OffsetArg = 0,
        trace: TraceArg = 1,
    ) -> r.OperationsPage:
        """Rows of the run's unified_perf_summary (one per operation signature): filtered,
        sorted largest first and paged; `next_offset` continues when `has_more`. In a
        comparative run, trace 1's rows carry trace 2's time beside them; `trace` = 2 reads
        the reference's own rows."""
        return await engine(
            query, app_state(ctx), run, category, name_contains, sort_by, columns, limit,
            offset, trace,
        )  # fmt: skip

    @mcp.tool(title="List tables", annotations=READ_ONLY)
    async def list_tables(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.TableList:
        """The run's perf-report tables: rows, columns and the resource URI of each (both
        traces' in a comparative run, `trace` saying whose)."""
        return await engine(tables, app_state(ctx), run)
