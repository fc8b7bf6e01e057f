"""Reading the run's operations and perf-report tables a page at a time."""

from __future__ import annotations

import json
from typing import Annotated, Any

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
) -> r.OperationsPage:
    table = run_results(st, run).report.sheets.get(UNIFIED)
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


def tables(st: AppState, run: Run) -> r.TableList:
    sheets = run_results(st, run).report.sheets
    infos = [
        r.TableInfo(
            name=name,
            rows=len(frame),
            columns=[str(c) for c in frame.columns],
            resource=f"rooflens://runs/{run.id}/tables/{name}",
        )
        for name, frame in sheets.items()
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
    ) -> r.OperationsPage:
        """Rows of the run's unified_perf_summary (one per operation signature): filtered,
        sorted largest first and paged; `next_offset` continues when `has_more`."""
        return await engine(
            query, app_state(ctx), run, category, name_contains, sort_by, columns, limit, offset
        )

    @mcp.tool(title="List tables", annotations=READ_ONLY)
    async def list_tables(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.TableList:
        """The run's perf-report tables: rows, columns and the resource URI of each."""
        return await engine(tables, app_state(ctx), run)
