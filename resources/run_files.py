"""Resources that read a run's artifacts; every unknown name fails with what does exist."""

from __future__ import annotations

import json
from pathlib import Path

from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from rooflens.analyzers.findings.drafts import findings_path
from rooflens.server.runs import (
    AGGREGATED,
    ANALYSED,
    LOADED,
    PREPARED,
    REPORTED,
    AppState,
    Run,
)

STEP_ORDER = (LOADED, PREPARED, ANALYSED, AGGREGATED, REPORTED)
MANIFEST = Path("category_data") / "category_manifest.json"
TABLES = "perf_report_csvs"


def known(names: list[str]) -> str:
    return ", ".join(names) or "none"


def run_for(st: AppState, run_id: str) -> Run:
    run = st.runs.runs.get(run_id)
    if run is None:
        raise ResourceNotFoundError(
            f"unknown run id {run_id!r}; known runs: {known(list(st.runs.runs))} "
            "(call load_trace or run_full_analysis to start one)"
        )
    return run


def list_runs(st: AppState, step: str | None = None) -> str:
    rows = [
        {
            "run_id": run.id,
            "trace": run.trace_path.name,
            "out_folder": run.out_dir.name,
            "platform": run.platform,
            "steps": [s for s in STEP_ORDER if s in run.steps],
        }
        for run in st.runs.runs.values()
        if not step or step in run.steps
    ]
    return json.dumps({"runs": rows}, indent=2)


def need(run: Run, rel: Path | str, what: str, next_tool: str) -> Path:
    path = run.out_dir / rel
    if not path.is_file():
        raise ResourceNotFoundError(
            f"run {run.id} has no {what} yet; call {next_tool}(run_id={run.id!r}) first"
        )
    return path


def categories(run: Run) -> list[str]:
    """Category names from the run's manifest ([] before prepare_category_data)."""
    path = run.out_dir / MANIFEST
    if not path.is_file():
        return []
    return [c["name"] for c in json.loads(path.read_text())["categories"]]


def category_file(run: Run, category: str, kind: str) -> Path:
    """The `kind` file (metrics|ops|findings) of a category named in the manifest."""
    need(run, MANIFEST, "category manifest", "prepare_category_data")
    names = categories(run)
    if category not in names:
        raise ResourceNotFoundError(
            f"unknown category {category!r} for {run.id}; known categories: {known(names)}"
        )
    paths = {n: path_of(run, n, kind) for n in names}
    if not paths[category].is_file():
        have = [n for n, p in paths.items() if p.is_file()]
        hint = {
            "metrics": "run_category_analysis",
            "ops": "prepare_category_data (not every category has an ops table)",
            "findings": "draft_findings",
        }[kind]
        raise ResourceNotFoundError(
            f"run {run.id} has no {kind} for category {category!r} (see {hint}); "
            f"categories with {kind}: {known(have)}"
        )
    return paths[category]


def path_of(run: Run, category: str, kind: str) -> Path:
    if kind == "findings":
        return findings_path(run.out_dir, category)
    suffix = "_metrics.json" if kind == "metrics" else "_ops.csv"
    return run.out_dir / "category_data" / f"{category}{suffix}"


def tables(run: Run) -> list[str]:
    folder = run.out_dir / TABLES
    return sorted(p.stem for p in folder.glob("*.csv")) if folder.is_dir() else []


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
    return run.out_dir / TABLES / f"{table}.csv"
