"""The CLI as a Unix tool: --version, `python -m rooflens`, a light `--help`, one JSON object
with `--json`, progress only on a terminal, one-line errors with documented exit codes."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from rooflens.analyzers.pipeline.ledger import file_sha256
from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.cli.main import main
from rooflens.cli.progress import Progress
from tests.helpers.perf_report_files import CSVS

HEAVY = ("pandas", "numpy", "matplotlib", "openpyxl", "mcp", "rich", "uvicorn", "dask")


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_sample_trace(tmp_path / "sample.json.gz", seed=3)


def test_version_names_the_installed_distribution(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"rooflens {version('rooflens')}\n"


@pytest.mark.slow
def test_python_dash_m_rooflens_runs_the_cli(tmp_path: Path) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "rooflens", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: rooflens ")
    commands = ("demo", "inspect", "report", "analyze", "analyze-job", "validate", "serve")
    for command in (*commands, "platforms"):
        assert f"\n    {command}" in shown.stdout
    assert "130 interrupted" in shown.stdout


PROBE = """
import json, sys
from rooflens.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


@pytest.mark.parametrize(
    "argv", [[], ["--help"], ["analyze", "--help"], ["analyze-job", "--help"], ["--version"]]
)
@pytest.mark.slow
def test_the_cli_and_its_help_import_no_heavy_module(argv: list[str]) -> None:
    """`import rooflens.cli.main` and `--help` load none of the heavy libraries (the commands
    import them when they run), so `rooflens --help` answers at once."""
    probe = PROBE.format(heavy=HEAVY)
    if not argv:
        probe = probe.replace("main(sys.argv[1:])", "pass")
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=60
    )
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_report_json_is_one_object_naming_what_was_written(trace, tmp_path, capsys) -> None:
    out = tmp_path / "report"
    assert main(["report", str(trace), "--out", str(out), "--json"]) == 0
    captured = capsys.readouterr()
    written = json.loads(captured.out)
    assert captured.err == ""  # stderr is not a terminal: no progress
    record = json.loads((out / "run.json").read_text())
    assert written["command"] == "report"
    assert written["out"] == str(out)
    assert written["run_id"] == record["run_id"]
    assert written["trace_sha256"] == file_sha256(trace) == record["trace"]["sha256"]
    assert written["platform"] == "MI300X"  # suggested by the sample trace's device name
    assert written["steps"] == ["loaded"] == record["steps"]
    assert {Path(t).stem for t in written["tables"]} == set(CSVS)
    assert written["workbook"] == "perf_report.xlsx"
    assert written["categories"] == [] and written["priorities"] == []
    assert sorted(written["artifacts"]) == sorted(["run.json", *record["artifacts"]])
    assert written["replaced_run"] is None


@pytest.mark.slow
def test_analyze_and_validate_json(trace, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--out", str(out), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["command"] == "analyze"
    names = [c["name"] for c in written["categories"]]
    # every step of the pipeline, per category where it is per category, in order
    per_category = [f"{step}:{name}" for name in names for step in ("analysed", "drafted")]
    assert written["steps"] == ["loaded", "prepared", *per_category, "aggregated", "reported"]
    assert names[:3] == ["cpu_idle", "multi_kernel", "kernel_fusion"]  # system ones first
    assert "gemm" in names and set(names) <= set(written["prepared_categories"])
    for category in written["categories"]:
        assert (out / category["findings_file"]).is_file()
    items = json.loads((out / "priority_data.json").read_text())["priorities"]
    assert written["priorities"] == items and items[0]["p_number"] == 1
    assert written["report"] == "analysis.md" and written["plot"] == "perf_improvement.png"

    assert main(["validate", str(out), "--json"]) == 0
    checked = json.loads(capsys.readouterr().out)
    assert checked["valid"] is True and checked["problems"] == []
    assert checked["run_id"] == written["run_id"]
    assert checked["trace"]["sha256"] == written["trace_sha256"]
    assert set(checked["checks"]) == {
        "time_check",
        "coverage_check",
        "priority_check",
        "efficiency_check",
    }
    (out / "analysis.md").write_text("# edited by hand\n")
    assert main(["validate", str(out), "--json"]) == 1
    checked = json.loads(capsys.readouterr().out)
    assert checked["valid"] is False
    assert any(p.startswith("analysis.md: changed after run") for p in checked["problems"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["report", "{tmp}/missing.json", "--out", "{tmp}/o"], "file not found"),
        (["report", "{tmp}", "--out", "{tmp}/o"], "is a folder, not a trace file"),
        (["report", "{trace}", "--platform", "NOPE", "--out", "{tmp}/o"], "NOPE"),
        (["report", "{trace}", "--out", "{trace}"], "is a file, not a folder"),
        (["validate", "{tmp}"], "is not a run folder"),
        (["validate", "{tmp}/report"], "holds a perf report only"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(trace, tmp_path, capsys, argv, message) -> None:
    assert main(["report", str(trace), "--out", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    argv = [a.format(tmp=tmp_path, trace=trace) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rooflens: ") and err.count("\n") == 1 and message in err
    assert not (tmp_path / "o").exists()


def test_progress_is_silent_off_a_terminal_and_ticks_on_one() -> None:
    pipe = io.StringIO()
    quiet = Progress(pipe)
    assert not quiet.enabled
    with quiet.step("reading the trace"):
        pass
    assert pipe.getvalue() == ""

    terminal = io.StringIO()
    shown = Progress(terminal, enabled=True)
    with shown.step("reading the trace"):
        pass
    with pytest.raises(ValueError), shown.step("building the perf report"):
        raise ValueError("boom")
    text = terminal.getvalue()
    assert "✓" in text and "reading the trace" in text
    assert "✓ building" not in text  # a failed step gets no tick


def test_a_long_step_shows_its_time_and_how_far_it_is(monkeypatch) -> None:
    """The spinner's text after DETAIL_AFTER_S: the step's time and the caller's detail."""
    from rooflens.cli import progress

    assert progress.status_text("reading the trace", 0.5, "read 1 of 9 MB") == "reading the trace"
    assert (
        progress.status_text("reading the trace", 3.2, "read 1 of 9 MB")
        == "reading the trace (read 1 of 9 MB, 3 s)"
    )
    assert progress.status_text("the tree diff", 12.0, None) == "the tree diff (12 s)"

    monkeypatch.setattr(progress, "DETAIL_AFTER_S", 0.0)
    monkeypatch.setattr(progress, "REFRESH_S", 0.01)
    asked = []
    shown = threading.Event()

    def detail() -> str:
        asked.append(1)
        if len(asked) >= 3:
            shown.set()
        return f"read {len(asked)} of 9 MB"

    terminal = io.StringIO()
    with Progress(terminal, enabled=True).step("reading the trace", detail):
        assert shown.wait(10)  # the refresher asked for the detail while the step ran
    calls = len(asked)
    time.sleep(0.05)
    assert len(asked) == calls  # and stopped when the step ended


def test_a_trace_read_says_how_far_it_is(tmp_path) -> None:
    from rooflens.cli.trace_read import TraceRead

    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": []}' + b" " * (3 * 2**20))
    read = TraceRead(path)
    read.text()
    read.identity()
    assert read.progress() == "decoding the 3 MB file's JSON"
