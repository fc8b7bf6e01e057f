"""Resources that read a run's artifacts; every unknown name fails with what does exist.

Names from a URI (run id, category, table) are matched against what the run has before any
path is built from them.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from rooflens.analyzers.findings.drafts import findings_path
from rooflens.analyzers.prepare.categories import CategoryLookupError, find_category
from rooflens.analyzers.prepare.manifest import MANIFEST, read_manifest
from rooflens.analyzers.run_folder import RunFolderError
from rooflens.server.paths import PathRefused
from rooflens.server.runs import STEP_ORDER, Run, RunNotFound
from rooflens.server.state import AppState

TABLES = "perf_report_csvs"
NEXT_TOOL = {
    "metrics": "run_category_analysis",
    "ops": "prepare_category_data (not every category has an ops table)",
    "findings": "draft_findings",
}


def known(names: list[str]) -> str:
    return ", ".join(names) or "none"


def caller(ctx: Context) -> tuple[AppState, str | None]:
    st: AppState = ctx.request_context.lifespan_context
    return st, st.owner(ctx.headers)


def run_for(ctx: Context, run_id: str) -> Run:
    st, owner = caller(ctx)
    try:
        run = st.runs.get(run_id, owner, st.isolate)
        st.policy.folder_without_links(run.folder)  # a link planted in the folder is not read
    except (RunNotFound, PathRefused, RunFolderError) as exc:
        raise ResourceNotFoundError(str(exc)) from None
    return run


def list_runs(ctx: Context, step: str | None = None) -> str:
    st, owner = caller(ctx)
    rows = [
        {
            "run_id": run.id,
            "trace": run.record.trace.name,
            "platform": run.platform,
            "created": run.record.created,
            "steps": [s for s in STEP_ORDER if run.done(s)],
        }
        for run in st.runs.visible(owner, st.isolate)
        if not step or run.done(step)
    ]
    return json.dumps({"runs": rows}, indent=2)


def need(run: Run, rel: Path | str, what: str, next_tool: str) -> Path:
    path = run.folder / rel
    if not path.is_file():
        raise ResourceNotFoundError(
            f"run {run.id} has no {what} yet; call {next_tool}(run_id={run.id!r}) first"
        )
    return path


def categories(run: Run) -> list[tuple[str, str]]:
    """(key, display name) of the run's categories ([] before prepare_category_data)."""
    manifest = read_manifest(run.folder)
    return [(c.name, c.display_name) for c in manifest.categories] if manifest else []


def category_file(run: Run, category: str, kind: str) -> Path:
    """The `kind` file (metrics|ops|findings) of a category the manifest names."""
    need(run, MANIFEST, "category manifest", "prepare_category_data")
    names = categories(run)
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


def path_of(run: Run, key: str, kind: str) -> Path:
    if kind == "findings":
        return findings_path(run.folder, key)
    suffix = "_metrics.json" if kind == "metrics" else "_ops.csv"
    return run.folder / "category_data" / f"{key}{suffix}"


def tables(run: Run) -> list[str]:
    folder = run.folder / TABLES
    return sorted(p.stem for p in folder.glob("*.csv")) if folder.is_dir() else []


def table_list(run: Run) -> str:
    rows = []
    for name in tables(run):
        with (run.folder / TABLES / f"{name}.csv").open(encoding="utf-8") as f:
            header = f.readline()
            count = sum(1 for _ in f)
        rows.append(
            {
                "name": name,
                "rows": count,
                "header": header.strip(),
                "resource": f"rooflens://runs/{run.id}/tables/{name}",
            }
        )
    return json.dumps({"run_id": run.id, "tables": rows}, indent=2)


def table_file(run: Run, table: str) -> Path:
    names = tables(run)
    if not names:
        raise ResourceNotFoundError(
            f"run {run.id} has no perf report tables yet; call load_trace first"
        )
    if table not in names:
        raise ResourceNotFoundError(
            f"unknown table {table!r} for {run.id}; known tables: {known(names)}"
        )
    return run.folder / TABLES / f"{table}.csv"
