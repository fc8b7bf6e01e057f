"""`run_demo()`: the sample trace analysed end to end through a real stdio MCP server."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from rooflens.cli.demo import executive_summary, run_demo


@pytest.mark.slow
def test_demo_without_a_trace_validates_and_writes_its_summary_into_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd, temp = tmp_path / "clone", tmp_path / "tmp"
    cwd.mkdir()
    temp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    assert run_demo() == 0
    out = capsys.readouterr().out
    assert list(cwd.iterdir()) == []  # nothing left in the current folder (a clone, say)
    # the server's run folder is in its workspace, inside the demo's new temporary folder
    (folder,) = temp.glob("rooflens_demo_*")
    assert f"Writing into {folder}" in out and f"Everything the demo wrote is in {folder}" in out
    reports = list(folder.glob("rooflens_runs/run-*/analysis.md"))
    assert len(reports) == 1
    run = reports[0].parent
    assert str(reports[0]) in out
    assert f"rooflens://runs/{run.name}/report" in out
    assert "Report validated: yes" in out
    assert "GPU utilisation" in out
    # the client's executive summary reached the report, built from the ranked priorities
    items = json.loads((run / "priority_data.json").read_text())["priorities"]
    summary = executive_summary([{"p": i["p_number"], "category": i["category"]} for i in items])
    assert items and f"P1 ({items[0]['category']})" in summary
    assert f"P1. {items[0]['title']}" in out  # the ranked items, as the tool returned them
    assert summary in reports[0].read_text()
    assert summary in out
    record = json.loads((run / "run.json").read_text())
    assert record["run_id"] == run.name
    assert record["steps"][-1] == "reported"


def test_executive_summary_without_priorities_says_so() -> None:
    assert "No finding shows a saving" in executive_summary([])


@pytest.mark.slow
def test_demo_of_a_trace_writes_into_out_not_beside_the_trace(tmp_path: Path, capsys) -> None:
    from rooflens.analyzers.synthetic.sample import write_sample_trace

    trace = write_sample_trace(tmp_path / "traces" / "mine.json.gz")
    out = tmp_path / "demo"
    assert run_demo(str(trace), str(out)) == 0
    assert sorted(p.name for p in trace.parent.iterdir()) == ["mine.json.gz"]
    assert len(list(out.glob("rooflens_runs/run-*/analysis.md"))) == 1
    assert f"Everything the demo wrote is in {out}" in capsys.readouterr().out


def test_demo_with_a_missing_trace_is_bad_input(tmp_path: Path, capsys) -> None:
    assert run_demo(str(tmp_path / "missing.json.gz")) == 2
    assert "missing.json.gz: file not found" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_on_a_trace_without_gpu_events_stops_before_writing_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
         "ts": 1000 + 10 * i, "dur": 5, "args": {}}
        for i in range(10)
    ]  # fmt: skip
    trace = tmp_path / "host_only.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    assert run_demo(str(trace)) == 1
    assert "host_only.json cannot be analysed" in capsys.readouterr().err
    assert not any(tmp_path.rglob("run.json"))
