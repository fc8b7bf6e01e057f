"""Reading the run's operations and perf-report tables a page at a time."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from rooflens.analyzers.compare.diff_stats import lca_totals
from rooflens.analyzers.prepare.categories import (
    CategoryLookupError,
    find_category,
    normalise_category,
)

from .. import results as r
from ..bounded import fit
from ..loading import run_results
from ..runs import Run
from ..state import AppState
from .common import (
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
DIFF_STATS = "diff_stats"
DIFF_LCAS = "diff_lca_totals"
DELTA = "delta_us (trace2 - trace1)"
SORT_DEFAULT = "Kernel Time (µs)_sum"
KERNEL = "kernel"  # derived: the name of the op's longest-running kernel, shortened
KERNEL_CHARS = 80
# A text cell longer than this is cut with an ellipsis in a result, so a row of names that
# run to thousands of characters (templated kernels) still fits one; the resource has it whole.
CELL_CHARS = 1000
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

# the compact columns of the comparison tables, and each table's default sort (largest first)
DIFF_COMPACT = (
    "name",
    "cpu_op_name",
    "source",
    "kernel_time",
    "lowest_common_ancestor_name",
    "lowest_common_ancestor_id",
    "nn_module_parent",
)
COMPACT_OF = {UNIFIED: COMPACT, DIFF_STATS: DIFF_COMPACT}
SORT_OF = {UNIFIED: SORT_DEFAULT, DIFF_STATS: "kernel_time", DIFF_LCAS: "kernel_time_trace1_us"}
# long cells left out of the other tables' default columns (ask for them by name)
LONG = ("call_stack_full", "kernel_details_summary", "Input Strides", "Concrete Inputs")

TableArg = Annotated[
    str,
    Field(
        description="A list_tables table (default: one row per operation signature); "
        "comparative trace 1 also diff_stats, diff_lca_totals."
    ),
]
CategoryFilterArg = Annotated[
    str | None,
    Field(description="Only this category (key or display name, any case)."),
]
NameArg = Annotated[
    str | None,
    Field(description="Only rows whose name (lca_name) contains this text."),
]
TraceArg = Annotated[
    Literal[1, 2],
    Field(
        description="Comparative run: 1 (the one to optimise, with trace 2's time) or 2 (the "
        "reference)."
    ),
]
SortArg = Annotated[
    str | None,
    Field(
        description="Column to sort by, largest first; default the table's time column "
        "(else file order)."
    ),
]
ColumnsArg = Annotated[
    list[str] | None,
    Field(description="Columns (list_tables names, plus kernel); default a compact set."),
]


def _kernel(details: Any) -> str | None:
    if not isinstance(details, list) or not details:
        return None
    longest = max(details, key=lambda k: k.get("total_duration_us") or 0)
    name = str(longest.get("name") or "")
    return name if len(name) <= KERNEL_CHARS else name[: KERNEL_CHARS - 3] + "..."


def _json_value(value: Any) -> Any:
    """A cell as a JSON value: NaN and missing as null, numpy scalars as Python ones, floats
    to 10 decimals (what the table's JSON has always given)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return (
            None if value != value or value in (float("inf"), float("-inf")) else round(value, 10)
        )
    return None if value is None or value is pd.NA or value is pd.NaT else value


def _cut(value: Any) -> Any:
    if isinstance(value, str) and len(value) > CELL_CHARS:
        return value[: CELL_CHARS - 1] + "…"
    return value


def _category_filter(table: pd.DataFrame, category: str) -> pd.Series:
    values = [v for v in table["op category"].dropna().unique()]
    pairs = [normalise_category(v) for v in values]
    try:
        key = find_category(category, pairs)
    except CategoryLookupError as exc:
        raise as_tool_error(exc) from exc
    displays = {d for k, d in pairs if k == key}
    return table["op category"].isin(displays)


def _default_columns(name: str, known: list[str]) -> list[str]:
    compact = COMPACT_OF.get(name)
    if compact is not None:
        return [c for c in compact if c in known]
    return [c for c in known if c not in LONG and c != KERNEL]


def _filtered(
    table: pd.DataFrame, table_name: str, category: str | None, name_contains: str | None
) -> pd.DataFrame:
    if category is not None:
        if "op category" not in table.columns:
            raise ToolError(
                f"{table_name} has no 'op category' column; filter by category in "
                f"{UNIFIED} or ops_unique_args, or leave category out"
            )
        table = table[_category_filter(table, category)]
    if name_contains:
        named = "lca_name" if table_name == DIFF_LCAS else "name"
        if named not in table.columns:
            raise ToolError(f"{table_name} has no {named!r} column; leave name_contains out")
        table = table[table[named].astype(str).str.contains(name_contains, regex=False)]
    return table


def query(
    st: AppState,
    run: Run,
    category: str | None,
    name_contains: str | None,
    sort_by: str | None,
    columns: list[str] | None,
    limit: int,
    offset: int,
    trace: int = 1,
    table_name: str = UNIFIED,
) -> r.OperationsPage:
    table = table_of(st, run, trace, table_name)
    known = [str(c) for c in table.columns] + ([KERNEL] if table_name == UNIFIED else [])
    wanted = list(columns) if columns else _default_columns(table_name, known)
    sort_by = sort_by or SORT_OF.get(table_name)
    unknown = [c for c in [*wanted, *([sort_by] if sort_by else [])] if c not in known]
    if unknown:
        raise ToolError(
            f"unknown column(s) {', '.join(map(repr, unknown))} in {table_name}; its columns "
            f"are: {', '.join(known)}"
        )
    if sort_by == KERNEL:
        raise ToolError("sort by a table column, not the derived 'kernel'")
    table = _filtered(table, table_name, category, name_contains)
    if sort_by:
        table = table.sort_values(sort_by, ascending=False, kind="stable", na_position="last")
    page = table.iloc[offset : offset + limit]
    if KERNEL in wanted:
        page = page.assign(kernel=page["kernel_details_summary"].map(_kernel))
    rows = [
        {column: _cut(_json_value(value)) for column, value in zip(wanted, row, strict=True)}
        for row in page[wanted].itertuples(index=False, name=None)
    ]
    base = r.OperationsPage(
        run_id=run.id,
        table=table_name,
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
    """The perf-report tables of trace 1 (with the comparison columns in a comparative run,
    and the tree diff: diff_stats and its totals per lowest common ancestor) or of trace 2."""
    results = run_results(st, run)
    compared = results.comparison
    if compared is None:
        if trace == 2:
            raise ToolError(
                f"{run.id} compares no traces, so it has no trace 2; call load_trace with "
                "compare_with for a comparative run"
            )
        return results.report.sheets
    if trace == 2:
        return compared.report.sheets
    stats = compared.diff_stats
    return {**compared.trace1_sheets, DIFF_STATS: stats, DIFF_LCAS: _lca_view(stats)}


def _lca_view(stats: pd.DataFrame) -> pd.DataFrame:
    """lca_totals with the difference a reader sorts by (µs; below 0: trace 2 faster)."""
    totals = lca_totals(stats)
    delta = totals["kernel_time_trace2_us"] - totals["kernel_time_trace1_us"]
    return totals.assign(**{DELTA: delta})


def table_of(st: AppState, run: Run, trace: int, name: str) -> pd.DataFrame:
    sheets = sheets_of(st, run, trace)
    table = sheets.get(name)
    if table is None:
        if name == UNIFIED:
            raise ToolError(f"{run.id} has no {UNIFIED} (the trace has no CPU operators)")
        raise ToolError(
            f"{run.id} has no table {name!r} for trace {trace}; its tables are: "
            f"{', '.join(sorted(sheets))} (list_tables describes them)"
        )
    return table


def tables(st: AppState, run: Run) -> r.TableList:
    compared = run_results(st, run).comparison is not None
    where = {1: "trace1/tables", 2: "trace2/tables"} if compared else {1: "tables"}
    infos = [
        r.TableInfo(
            name=name,
            rows=len(frame),
            columns=[str(c) for c in frame.columns],
            resource=f"rooflens://runs/{run.id}/{folder}/{name}" if name != DIFF_LCAS else None,
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
        sort_by: SortArg = None,
        columns: ColumnsArg = None,
        limit: LimitArg = 25,
        offset: OffsetArg = 0,
        trace: TraceArg = 1,
        table: TableArg = UNIFIED,
    ) -> r.OperationsPage:
        """Page a run table (default unified_perf_summary): filter, sort largest first, select
        columns; next_offset while has_more. Comparative: trace 1's rows carry trace 2's time."""
        return await engine(
            query, app_state(ctx), run, category, name_contains, sort_by, columns, limit,
            offset, trace, table,
        )  # fmt: skip

    @mcp.tool(title="List tables", annotations=READ_ONLY)
    async def list_tables(run_id: RunIdArg, ctx: Ctx, run: RunDep) -> r.TableList:
        """The run's perf-report tables: rows, columns and resource of each."""
        return await engine(tables, app_state(ctx), run)
