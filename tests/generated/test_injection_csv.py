"""Every CSV cell a run writes from the injection corpus is safe, and reads back exactly.

`rooflens compare` of two injection traces (devkit/injection.py: every name hostile, formula
prefixes, tabs, carriage returns, a prompt sentence, a 5,000-character name) writes every
kind of table rooflens has: the perf report, trace 1's comparison tables with diff_stats,
trace 2's tables, each category's ops and the condensed op info. Written escaped, no cell
starts with a formula trigger unless quoted, every row has its header's width (a bare CR
would split a row), and unescaping gives exactly what the same run writes with --raw-csv.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

from devkit.injection import MARK, write_injection_trace
from rooflens.analyzers.report.csv_cells import needs_escape, unescape_row
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

csv.field_size_limit(sys.maxsize)
TABLE_FOLDERS = (
    "perf_report_csvs",
    "perf_report_trace1_csvs",
    "perf_report_trace2_csvs",
    "category_data",
    "metadata",
)


def records(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as f:  # a CR in a cell stays a CR
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same comparison written escaped and raw."""
    folder = tmp_path_factory.mktemp("injection_csv")
    trace1 = write_injection_trace(folder / "injected.json.gz")
    trace2 = write_injection_trace(folder / "injected_blocking.json.gz", base="blocking")
    argv = ["compare", str(trace1), str(trace2), "--platform", "MI300X", "--platform2", "MI300X"]
    out = {"escaped": folder / "escaped", "raw": folder / "raw"}
    assert main([*argv, "--out", str(out["escaped"])]) == 0
    assert main([*argv, "--out", str(out["raw"]), "--raw-csv"]) == 0
    return out


def tables(run: Path) -> list[Path]:
    found = sorted(p for name in TABLE_FOLDERS for p in (run / name).rglob("*.csv"))
    assert {p.parent.name for p in found} == set(TABLE_FOLDERS)
    return found


def test_every_cell_written_is_safe_and_every_row_whole(runs) -> None:
    run = runs["escaped"]
    assert json.loads((run / "run.json").read_text())["csv_cells"] == "escaped"
    unsafe, broken, hostile = [], [], 0
    for path in tables(run):
        rows = records(path)
        width = len(rows[0]) if rows else 0
        broken += [(path.name, i) for i, row in enumerate(rows) if len(row) != width]
        for cell in (c for row in rows for c in row):
            hostile += MARK in cell
            if needs_escape(cell) and not cell.startswith("'"):
                unsafe.append((path.name, cell[:40]))
    assert hostile > 100  # the corpus reached the tables
    assert unsafe == [] and broken == []


def test_unescaping_gives_exactly_what_a_raw_run_writes(runs) -> None:
    escaped, raw = runs["escaped"], runs["raw"]
    assert json.loads((raw / "run.json").read_text())["csv_cells"] == "raw"
    changed = 0
    for path in tables(escaped):
        ours = records(path)
        theirs = records(raw / path.relative_to(escaped))
        assert [unescape_row(r) for r in ours] == theirs, path.name
        changed += ours != theirs
    assert changed >= 5  # the escape was at work in most tables
