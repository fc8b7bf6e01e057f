"""`run_demo()`: the sample trace analysed end to end through a real stdio MCP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.server.demo import run_demo


def test_demo_without_a_trace_validates_and_prints_the_report_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_demo() == 0
    out = capsys.readouterr().out
    reports = list((tmp_path / "rooflens_demo").rglob("analysis.md"))
    assert len(reports) == 1
    assert str(reports[0]) in out
    assert "Report validated: yes" in out
    assert "GPU utilisation" in out


def test_demo_with_a_missing_trace_fails(tmp_path: Path) -> None:
    assert run_demo(str(tmp_path / "missing.json.gz")) == 1
