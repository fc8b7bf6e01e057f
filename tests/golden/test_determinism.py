"""Two runs on the same trace write byte-identical artifacts (ARCHITECTURE: deterministic).

Declared exceptions: the workbook's document properties (`docProps/core.xml` holds its
creation and modification times; every other part of the XLSX must match), and in `run.json`
the run's random id, its start time and the workbook's hash; the rest of the record (trace
identity, steps, every other artifact's hash) must match too.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

TIMESTAMPED_XLSX_PARTS = {"docProps/core.xml"}
RUN_RECORD = "run.json"
RANDOM_RECORD_FIELDS = ("run_id", "created")


def _files(folder: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(folder)): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != RUN_RECORD
    }


def _record(folder: Path) -> dict:
    record = json.loads((folder / RUN_RECORD).read_text())
    for name in RANDOM_RECORD_FIELDS:
        record.pop(name)
    record["artifacts"].pop("perf_report.xlsx")
    return record


def _xlsx_parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {
            name: archive.read(name)
            for name in archive.namelist()
            if name not in TIMESTAMPED_XLSX_PARTS
        }


def test_two_analyze_runs_write_identical_artifacts(shared: Path, tmp_path: Path) -> None:
    trace = shared / "traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
    run = tmp_path / "run"  # the same path both times: the manifest records the run folder
    assert main(["analyze", str(trace), "--out", str(run)]) == 0
    first = tmp_path / "first"
    shutil.move(run, first)
    assert main(["analyze", str(trace), "--out", str(run)]) == 0

    ours, theirs = _files(first), _files(run)
    assert sorted(ours) == sorted(theirs)
    assert len(ours) > 30  # report CSVs, workbook, category data, metrics, findings, report
    assert _record(first) == _record(run)
    for name, path in ours.items():
        if name.endswith(".xlsx"):
            assert _xlsx_parts(path) == _xlsx_parts(theirs[name]), name
        else:
            assert path.read_bytes() == theirs[name].read_bytes(), name
