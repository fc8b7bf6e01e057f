"""The Python front door (analyzers/api.py, `import rooflens`): a run in memory with the
same answers the command line writes, computed on first use, saved only when asked; the
notebook summary keeps trace text as data."""

from __future__ import annotations

import subprocess
import sys
from functools import cache
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import pytest

import rooflens
from devkit.injection import MARK, write_injection_trace
from rooflens.analyzers.pipeline.ledger import RunFolderError
from rooflens.analyzers.pipeline.steps import NotAnalysable
from rooflens.analyzers.synthetic.copies import SETUP_UPLOAD
from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.analyzers.trace.errors import TraceError
from rooflens.cli.main import main as cli

UPLOAD = "setup_weight_upload"


@cache
def _trace(folder: Path, name: str) -> Path:
    return SITUATIONS[name].write(folder / f"{name}.json.gz")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("api")


@pytest.mark.slow
def test_the_package_says_its_version_and_imports_no_engine() -> None:
    assert rooflens.__version__ == version("rooflens")
    code = "import sys, rooflens; print(any(m.startswith('rooflens.analyzers') for m in sys.modules), 'pandas' in sys.modules)"  # noqa: E501
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        rooflens.nothing  # noqa: B018


def test_a_loaded_run_holds_its_tables_and_computes_the_rest_when_asked(folder: Path) -> None:
    run = rooflens.analyze(_trace(folder, UPLOAD), platform="H100_SXM", until="loaded")
    assert run.platform == "H100_SXM" and run.results.metrics == {}
    unified = run.tables["unified_perf_summary"]
    assert isinstance(unified, pd.DataFrame) and "aten::mm" in set(unified["name"])
    timeline = run.timeline.set_index("type")["time ms"]
    assert timeline["computation_time"] == pytest.approx(SETUP_UPLOAD.gemm_ms)
    assert timeline["exposed_memcpy_time"] == pytest.approx(SETUP_UPLOAD.upload_ms)
    top = run.priorities.priorities[0]  # the ranking runs now
    assert (top.p_number, top.category) == (1, "gemm")
    assert top.saving.cap_ms == pytest.approx(SETUP_UPLOAD.gemm_ms)
    assert run.metrics["gemm"].status == "OK"


@pytest.mark.slow
def test_the_report_the_plot_and_a_saved_folder_match_the_command_line(
    folder: Path, capsys
) -> None:
    trace = _trace(folder, UPLOAD)
    run = rooflens.analyze(trace, platform="H100_SXM")
    assert cli(["analyze", str(trace), "--out", str(folder / "cli"), "--platform", "H100_SXM"]) == 0
    written = (folder / "cli" / "analysis.md").read_text()
    assert run.report == written
    figure = run.plot()
    assert figure is not None and len(figure.axes) == 3
    assert figure.texts[0].get_text().startswith("Unidentified model")  # the suptitle
    saved = run.save(folder / "saved")
    assert (saved / "analysis.md").read_text() == written
    assert (saved / "priority_data.json").read_text() == (
        folder / "cli" / "priority_data.json"
    ).read_text()
    capsys.readouterr()
    assert cli(["validate", str(saved)]) == 0
    assert run.save(saved) == saved  # the same trace's run may be replaced
    other = rooflens.analyze(_trace(folder, "one_tiny_kernel"), platform="H100_SXM")
    with pytest.raises(RunFolderError, match="already holds the run of"):
        other.save(saved)  # another trace's run is kept unless forced
    assert other.save(saved, force=True) == saved
    (folder / "notes").mkdir()
    (folder / "notes" / "mine.txt").write_text("keep")
    with pytest.raises(RunFolderError, match="not a rooflens run"):
        run.save(folder / "notes", force=True)


@pytest.mark.slow
def test_a_comparison_goes_through_the_same_door(folder: Path) -> None:
    one = _trace(folder, "allocator_churn_cuda")
    two = _trace(folder, "filtered_host_side")
    run = rooflens.analyze(one, platform="H100_SXM", compare_with=two, until="aggregated")
    assert run.results.comparison is not None
    assert {m.comparison_scope for m in run.metrics.values() if hasattr(m, "comparison_scope")} == {
        "comparative"
    }
    assert "Standalone" not in run.report.splitlines()[0]


def test_the_notebook_summary_escapes_trace_text(folder: Path) -> None:
    run = rooflens.analyze(write_injection_trace(folder / "hostile.json.gz"), platform="MI300X")
    shown = run._repr_html_()
    assert MARK in run.report  # the names are there, as data
    assert "<!--" not in shown and "&lt;!-- reasoning-candidate" in shown  # escaped, kept
    assert "&quot;http://evil.example/" in shown and "<script" not in shown
    assert shown.count("<tr>") == 1 + min(10, len(run.priorities.priorities))


def test_bad_input_is_a_clear_error(folder: Path) -> None:
    with pytest.raises(TraceError):
        rooflens.analyze(folder / "missing.json")
    with pytest.raises(ValueError, match="until must be one of"):
        rooflens.analyze(_trace(folder, UPLOAD), until="done")
    with pytest.raises(NotAnalysable, match="cannot be analysed"):
        rooflens.analyze(_trace(folder, "counters_only"))
    inspected = rooflens.inspect(_trace(folder, UPLOAD))
    assert inspected.health.gpu.model and inspected.gpu_timeline
