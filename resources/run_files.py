"""Resources that read a run's artifacts; every unknown name fails with what does exist.

Names from a URI (run id, category, table) are matched against what the run has before any
path is built from them.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from rooflens.analyzers import layout
from rooflens.analyzers.prepare.categories import CategoryLookupError, find_category
from rooflens.analyzers.report.csv_cells import unescape_row

from .access import Caller, JobInfo, RunAccess, RunInfo, RunNotVisible
from .images import preview_png
from .pages import MARGIN, json_lists_page

# The run's own tables are read back cell by cell, and a cell may list many names of up to
# MAX_NAME_CHARS each (an operation's kernels; analyzers/trace/long_names.py), past the csv
# module's default of 128 KiB a field. The files are rooflens's own, so the reader takes any
# cell (the setting is process-wide).
CSV_FIELD_LIMIT = 2**31 - 1  # the largest every platform's C long holds
csv.field_size_limit(CSV_FIELD_LIMIT)

TABLES = layout.PERF_CSVS
NEXT_TOOL = {
    "metrics": "run_category_analysis",
    "ops": "prepare_category_data (not every category has an ops table)",
    "findings": "draft_findings",
}


JOB_TABLES = {
    "ranks": layout.JOB_RANKS,
    "nccl_implicit_sync": layout.JOB_COLLECTIVES,
    "straggler_summary": layout.JOB_STRAGGLERS,
}


def job_for(access: RunAccess, ctx: Context, job_id: str) -> JobInfo:
    try:
        return access.job(caller(ctx), job_id)
    except RunNotVisible as exc:
        raise ResourceNotFoundError(str(exc)) from None


def job_file(access: RunAccess, ctx: Context, job_id: str, rel: str) -> Path:
    """A file of the job `job_id`, if the caller may see the job."""
    return _job_path(job_for(access, ctx, job_id), rel)


def _job_path(job: JobInfo, rel: str) -> Path:
    path = job.folder / rel
    if not path.is_file():
        raise ResourceNotFoundError(f"job {job.id} has no {rel}")
    return path


def job_table_page(access: RunAccess, ctx: Context, job_id: str, table: str, offset: str) -> str:
    """One page of a job table, its text cells as the traces had them."""
    rel = JOB_TABLES.get(table)
    if rel is None:
        raise ResourceNotFoundError(
            f"no job table {table!r}; the job tables are {known(sorted(JOB_TABLES))}"
        )
    job = job_for(access, ctx, job_id)
    uri = f"rooflens://jobs/{job_id}/tables/{table}"
    path = _job_path(job, rel)
    return csv_page(access, ctx, path, uri, page_offset(offset), escaped=job.csv_escaped)


def job_record(access: RunAccess, ctx: Context, job_id: str, offset: int) -> str:
    """job.json as a reader needs it: the ledger's hashes and each trace's identity (size,
    mtime, SHA-256) left out, which `rooflens validate` reads from the file itself; the
    ranks a page at a time when they do not fit one result."""
    path = job_file(access, ctx, job_id, layout.JOB_FILE)
    record = json.loads(path.read_text("utf-8"))
    record["files_in_ledger"] = len(record.pop("artifacts", None) or {})
    for rank in record.get("ranks", []):
        rank.pop("trace", None)
    text = json.dumps(record, indent=1)
    return json_page(access, ctx, text, record, "ranks", f"rooflens://jobs/{job_id}", offset)


def known(names: list[str]) -> str:
    return ", ".join(names) or "none"


def caller(ctx: Context) -> Caller:
    return Caller(ctx.request_context.lifespan_context, ctx.headers)


def run_for(access: RunAccess, ctx: Context, run_id: str) -> RunInfo:
    try:
        return access.run(caller(ctx), run_id)
    except RunNotVisible as exc:
        raise ResourceNotFoundError(str(exc)) from None


def list_runs(access: RunAccess, ctx: Context, step: str | None = None) -> str:
    order = access.step_names()
    rows = [
        {
            "run_id": run.id,
            "trace": run.trace_name,
            "compared_with": run.compared_with,
            "platform": run.platform,
            "created": run.created,
            "steps": [s for s in order if run.done(s)],
        }
        for run in access.runs(caller(ctx))
        if not step or run.done(step)
    ]
    return json.dumps({"runs": rows}, indent=2)


def need(run: RunInfo, rel: Path | str, what: str, next_tool: str) -> Path:
    path = run.folder / rel
    if not path.is_file():
        raise ResourceNotFoundError(
            f"run {run.id} has no {what} yet; call {next_tool}(run_id={run.id!r}) first"
        )
    return path


def category_file(run: RunInfo, category: str, kind: str) -> Path:
    """The `kind` file (metrics|ops|findings) of a category the manifest names."""
    need(run, layout.MANIFEST, "category manifest", "prepare_category_data")
    names = list(run.categories)
    try:
        key = find_category(category, names)
    except CategoryLookupError as exc:
        raise ResourceNotFoundError(str(exc)) from None
    path = path_of(run, key, kind)
    if not path.is_file():
        have = [k for k, _ in names if path_of(run, k, kind).is_file()]
        raise ResourceNotFoundError(
            f"run {run.id} has no {kind} for category {key!r} (see {NEXT_TOOL[kind]}); "
            f"categories with {kind}: {known(have)}"
        )
    return path


def path_of(run: RunInfo, key: str, kind: str) -> Path:
    rel = {"findings": layout.findings, "metrics": layout.metrics, "ops": layout.ops_csv}[kind]
    return run.folder / rel(key)


# The perf report tables of a run, by the URI part that names them: the run's own tables and,
# in a comparative run, trace 1's with the comparison columns and diff_stats, and trace 2's.
TABLE_FOLDERS = {"": TABLES, "trace1/": layout.TRACE1_CSVS, "trace2/": layout.TRACE2_CSVS}


def tables(run: RunInfo, side: str = "") -> list[str]:
    folder = run.folder / TABLE_FOLDERS[side]
    return sorted(p.stem for p in folder.glob("*.csv")) if folder.is_dir() else []


def table_list(run: RunInfo, side: str = "") -> str:
    rows = []
    for name in tables(run, side):
        path = run.folder / TABLE_FOLDERS[side] / f"{name}.csv"
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.reader(f)  # records, not lines: a quoted cell may hold a line break
            columns = next(reader, [])
            count = sum(1 for _ in reader)
        header = io.StringIO()
        csv.writer(header, lineterminator="").writerow(
            unescape_row(columns) if run.csv_escaped else columns
        )
        rows.append(
            {
                "name": name,
                "rows": count,
                "header": header.getvalue(),
                "resource": f"rooflens://runs/{run.id}/{side}tables/{name}",
            }
        )
    if side and not rows:
        _not_comparative(run)
    return json.dumps({"run_id": run.id, "tables": rows}, indent=2)


def table_file(run: RunInfo, table: str, side: str = "") -> Path:
    names = tables(run, side)
    if not names:
        if side:
            _not_comparative(run)
        raise ResourceNotFoundError(
            f"run {run.id} has no perf report tables yet; call load_trace first"
        )
    if table not in names:
        raise ResourceNotFoundError(
            f"unknown table {table!r} for {run.id}; known tables: {known(names)}"
        )
    return run.folder / TABLE_FOLDERS[side] / f"{table}.csv"


def trace2_utilization(run: RunInfo) -> Path:
    path = run.folder / layout.TRACE2_UTILIZATION
    if not path.is_file():
        _not_comparative(run)
    return path


def trace2_metrics(run: RunInfo, category: str) -> Path:
    """Trace 2's system document of a comparative run (written with trace 1's cpu_idle)."""
    if category not in layout.TIMELINE_SYSTEM_KEYS:
        raise ResourceNotFoundError(
            f"trace 2 has no metrics {category!r}; "
            f"known: {known(list(layout.TIMELINE_SYSTEM_KEYS))}"
        )
    path = run.folder / layout.trace2_metrics(category)
    if not path.is_file():
        if not (run.folder / layout.TRACE2_UTILIZATION).is_file():
            _not_comparative(run)
        raise ResourceNotFoundError(
            f"run {run.id} has no trace-2 {category} metrics yet; call "
            f"run_category_analysis(run_id={run.id!r}, category='cpu_idle') first"
        )
    return path


def _not_comparative(run: RunInfo) -> None:
    raise ResourceNotFoundError(
        f"run {run.id} compares no traces; call load_trace with compare_with for a comparative run"
    )


def png(access: RunAccess, ctx: Context, data: bytes, full: str) -> bytes:
    """A plot as a resource serves it: reduced to fit one result unless `full` asks for
    the whole PNG (`?full=1`)."""
    if full not in ("", "0", "1", "true", "false"):
        raise ResourceNotFoundError(f"full must be 1 (the full-size PNG) or left out, not {full!r}")
    if full in ("1", "true"):
        return data
    return preview_png(data, access.page_bytes(caller(ctx)) - MARGIN)


def page_offset(text: str) -> int:
    """The `?offset=` of a table resource: rows to skip, 0 when not given."""
    if not text:
        return 0
    if not text.isdigit():
        raise ResourceNotFoundError(
            f"offset must be a whole number of rows (0 or more), not {text!r}"
        )
    return int(text)


def table_page(
    access: RunAccess, ctx: Context, run_id: str, table: str, offset: str, side: str = ""
) -> str:
    """One page of a run's perf report table (`side` "trace1/" or "trace2/": a comparative
    run's own tables), from the resource's `?offset=` text."""
    run = run_for(access, ctx, run_id)
    path = table_file(run, table, side)
    uri = f"rooflens://runs/{run_id}/{side}tables/{table}"
    return csv_page(access, ctx, path, uri, page_offset(offset), escaped=run.csv_escaped)


def csv_page(
    access: RunAccess, ctx: Context, path: Path, uri: str, offset: int, *, escaped: bool
) -> str:
    """The table at `path` from row `offset`, header first, as many rows as fit in one
    result (at least one). When rows are left, a last line starting with `#` says how many
    and names the next page, so a reader is never handed a cut table as if it were whole.
    `escaped`: the file's text cells were escaped against formulas; they are served as the
    trace had them (csv_cells.py)."""
    budget = access.page_bytes(caller(ctx))
    out = io.StringIO()
    write = _record_writer(out, escaped)
    total = shown = 0
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            return ""
        write(header)
        full = False
        for row in reader:
            total += 1
            if total <= offset or full:
                continue
            mark = out.tell()
            write(row)
            if out.tell() > budget and shown:
                out.seek(mark)
                out.truncate()
                full = True
                continue
            shown += 1
    end = offset + shown
    if end < total:
        out.write(
            f"# rows {offset + 1}-{end} of {total}; next page: {uri.split('?')[0]}?offset={end}"
            " (query_operations(table=...) sorts, filters and selects columns)\n"
        )
    return out.getvalue()


def _record_writer(out: io.StringIO, escaped: bool) -> Callable[[list[str]], None]:
    """Writes one record of a table page: its cells unescaped when the file's were escaped,
    and every field of a record holding a CR quoted (csv quotes only for the line end's
    characters, and an unquoted CR would end the record in the reader's parser)."""
    plain = csv.writer(out, lineterminator="\n")
    quoted = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_ALL)

    def write(row: list[str]) -> None:
        row = unescape_row(row) if escaped else row
        (quoted if any("\r" in cell for cell in row) else plain).writerow(row)

    return write


def metrics_page(
    access: RunAccess, ctx: Context, path: Path, uri: str, offset: int, list_path: str = ""
) -> str:
    """A category's metrics JSON, its `operations` a page at a time when it is too large;
    when that page still does not fit (a document whose bulk is other lists: kernel
    fusion's candidates), its largest lists cut instead (`pages.json_lists_page`)."""
    text = path.read_text(encoding="utf-8")
    budget = access.page_bytes(caller(ctx))
    if list_path:
        return json_lists_page(json.loads(text), uri, budget, list_path, offset)
    page = json_page(access, ctx, text, json.loads(text), "operations", uri, offset)
    if offset or len(page.encode("utf-8")) <= budget:
        return page
    return json_lists_page(json.loads(text), uri, budget, keep=("operations",))


def json_page(
    access: RunAccess, ctx: Context, text: str, doc: dict, key: str, uri: str, offset: int
) -> str:
    """`text` (the JSON of `doc`) when it fits one result; else everything but the list
    `doc[key]` whole and that list a page at a time (`<key>_page` says which and names the
    next page), so what describes the whole is never cut."""
    budget = access.page_bytes(caller(ctx))
    if offset == 0 and len(text.encode("utf-8")) <= budget:
        return text
    items = doc.pop(key, None) or []
    room = budget - len(json.dumps(doc, indent=1).encode("utf-8")) - 400
    kept: list = []
    for item in items[offset:]:
        room -= len(json.dumps(item, indent=1).encode("utf-8")) + 2
        if room < 0 and kept:
            break
        kept.append(item)
    while True:  # the estimate leaves out nesting: drop items until the page fits
        end = offset + len(kept)
        doc[f"{key}_page"] = {
            "offset": offset,
            "shown": len(kept),
            "total": len(items),
            "next": f"{uri}?offset={end}" if end < len(items) else None,
        }
        doc[key] = kept
        page = json.dumps(doc, indent=1)
        if len(kept) <= 1 or len(page.encode("utf-8")) <= budget:
            return page
        kept = kept[:-1]


def text_page(access: RunAccess, ctx: Context, path: Path, uri: str, offset: int) -> str:
    """A markdown file from line `offset`, whole lines, as many as fit one result (at least
    one); when lines are left, a last line says how many and names the next page."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    budget = access.page_bytes(caller(ctx)) - 200
    shown, used = [], 0
    for line in lines[offset:]:
        used += len(line.encode("utf-8"))
        if used > budget and shown:
            break
        shown.append(line)
    end = offset + len(shown)
    if end < len(lines):
        shown.append(
            f"\n*(lines {offset + 1}-{end} of {len(lines)}; next page: "
            f"{uri.split('?')[0]}?offset={end})*\n"
        )
    return "".join(shown)
