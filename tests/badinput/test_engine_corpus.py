"""Every case of the bad-input corpus through the engine, as the CLI and the MCP tools use it.

Refused cases must raise TraceError naming the file and the problem, from both entry points.
Loaded cases must give valid JSON with finite numbers, shares within [0, 100], the skipped
events in trace health, and a complete report folder (CSV + XLSX + model identification).
"""

from __future__ import annotations

import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from openpyxl import load_workbook

from devkit.badinput.corpus import CASES, CASES_BY_NAME, SAMPLE_GPU_EVENTS, Case, sample_bytes
from rooflens.analyzers.findings.composing.model_info import model_identification, op_rows
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import write_perf_report
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import Inspection, inspect_trace
from rooflens.analyzers.trace.open_trace import open_trace
from rooflens.analyzers.trace.read import MAX_TRACE_ENV


def _params(outcome: str) -> list[Any]:
    return [
        pytest.param(
            c,
            id=c.name,
            marks=pytest.mark.skipif(not c.available(), reason=f"no os.{c.needs} here"),
        )
        for c in CASES
        if c.outcome == outcome
    ]


@pytest.fixture
def deadline() -> Iterator[None]:
    """Fail instead of hanging if a FIFO is ever opened for reading again (POSIX only)."""
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError("the engine blocked on the input")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _write(case: Case, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if case.limit_mb is None:
        monkeypatch.delenv(MAX_TRACE_ENV, raising=False)
    else:
        monkeypatch.setenv(MAX_TRACE_ENV, str(case.limit_mb))
    return case.write(folder / "input")


def _floats(value: Any) -> Iterator[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, list):
        for v in value:
            yield from _floats(v)


def _timeline_rows(inspection: Inspection) -> list[Any]:
    return inspection.gpu_timeline + [r for d in inspection.per_device for r in d.gpu_timeline]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Inspection:
    """The undamaged sample, for the cases that must not change the GPU timeline."""
    path = tmp_path_factory.mktemp("clean") / "sample.json"
    path.write_bytes(sample_bytes())
    return inspect_trace(path)


@pytest.mark.usefixtures("deadline")
@pytest.mark.parametrize("case", _params("refused"))
def test_refused_inputs_raise_a_trace_error_that_names_the_problem(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(case, tmp_path, monkeypatch)
    for entry in (inspect_trace, open_trace):
        with pytest.raises(TraceError) as info:
            entry(path)
        message = str(info.value)
        assert case.message in message, message
        assert str(path) in message
        assert "Traceback" not in message


@pytest.mark.parametrize("case", _params("loaded"))
def test_loaded_inputs_give_finite_json_and_count_what_was_skipped(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean: Inspection
) -> None:
    inspection = inspect_trace(_write(case, tmp_path, monkeypatch))
    dumped = inspection.model_dump(mode="json")
    text = json.dumps(dumped, allow_nan=False)  # raises on NaN / infinity
    assert json.loads(text) == dumped
    assert all(math.isfinite(f) for f in _floats(dumped))
    for row in _timeline_rows(inspection):
        assert 0.0 <= row.percent <= 100.0, row
        assert row.time_ms is not None and row.time_ms >= 0.0, row
    health = inspection.health
    assert health.skipped_events == dict(case.skipped)
    assert dict(case.malformed).items() <= health.malformed_values.items()
    codes = {w.code: w.message for w in health.warnings}
    if case.message:
        assert case.message in codes, codes
    if case.skipped:
        assert f"{sum(case.skipped.values())} events were left out" in codes["skipped_events"]
    kernels_skipped = sum(n for reason, n in case.skipped.items() if reason != "not_an_object")
    assert health.linking.gpu_events == SAMPLE_GPU_EVENTS - kernels_skipped
    if case.same_timeline:
        assert inspection.gpu_timeline == clean.gpu_timeline


@pytest.mark.parametrize("case", _params("loaded"))
def test_loaded_inputs_give_a_complete_report_folder(
    case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(case, tmp_path, monkeypatch)
    report = build_report(open_trace(path), get_platform("MI300X"))
    out = tmp_path / "run"
    files = write_perf_report(report, out, path.name, "AMD Instinct MI300X")
    assert {p.name for p in files.csvs} >= {"gpu_timeline.csv", "unified_perf_summary.csv"}
    workbook = load_workbook(files.xlsx, read_only=True)
    assert workbook.sheetnames[0] == "summary"
    timeline = report.sheets["gpu_timeline"]["percent"].to_numpy()
    assert ((timeline >= 0) & (timeline <= 100)).all()
    shares = report.sheets["unified_perf_summary"]["Percentage (%)"].to_numpy(dtype=float)
    assert ((shares >= 0) & (shares <= 100)).all()
    for name, sheet in report.sheets.items():
        numbers = sheet.select_dtypes("number").to_numpy(dtype=float)
        assert not np.isinf(numbers).any(), name
    rows = op_rows(report.sheets.get("unified_perf_summary"))
    model_identification(rows or [])  # the junk cells must not trip it up


def _sheet_text(path: Path) -> set[str]:
    workbook = load_workbook(path, read_only=True)
    return {
        cell
        for sheet in workbook.worksheets
        for row in sheet.iter_rows(values_only=True)
        for cell in row
        if isinstance(cell, str)
    }


def test_control_characters_in_names_reach_the_xlsx_as_replacement_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(CASES_BY_NAME["control_characters_in_names"], tmp_path, monkeypatch)
    report = build_report(open_trace(path), get_platform("MI300X"))
    files = write_perf_report(report, tmp_path / "run", path.name, "gpu")
    texts = _sheet_text(files.xlsx)
    assert "aten::mm\ufffdevil" in texts
    assert "aten::addmm\ufffd\ufffd\ufffd" in texts  # \x01, \x1f and the non-character \ufffe
    assert not any("\x00" in t or "\x01" in t for t in texts)
    csv = (files.csv_folder / "ops_summary.csv").read_text(encoding="utf-8")
    assert "aten::mm\x00evil" in csv  # CSV keeps the name as the trace wrote it


def test_non_numeric_shapes_get_no_perf_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = get_platform("MI300X")
    sane = tmp_path / "sample.json"
    sane.write_bytes(sample_bytes())
    modelled = build_report(open_trace(sane), platform).unified.instances["GFLOPS"].notna()
    assert modelled.sum() >= 30  # the undamaged sample: most operators get a perf model
    path = _write(CASES_BY_NAME["non_numeric_shapes"], tmp_path, monkeypatch)
    instances = build_report(open_trace(path), platform).unified.instances
    assert len(instances) == len(modelled)
    assert instances["GFLOPS"].isna().all()  # every shape the corpus wrote is junk


def test_lone_surrogates_are_repaired_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(CASES_BY_NAME["lone_surrogates"], tmp_path, monkeypatch)
    model = open_trace(path)
    names = set(model.events["name"].astype(str))
    assert {"aten::\ufffdmm", "gemm\ufffd"} <= names
    assert model.trace.repaired_utf8_batches == 1
