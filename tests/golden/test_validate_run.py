"""validate_run on a run folder `rooflens analyze` wrote for a shared trace (Qwen1.5-0.5B on
MI300X); tests/generated/test_analyze.py checks the same on generated traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.findings.validation.run_checks import validate_run
from rooflens.cli.main import main

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared


def test_real_run_qwen(shared: Path, tmp_path: Path) -> None:
    trace = shared / "traces" / "mi300" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    run = tmp_path / "run"
    main(["analyze", str(trace), "--out", str(run)])
    result = validate_run(run)
    print(result.summary())
    assert result.time_check.status == "PASS", result.time_check.messages
    assert result.coverage_check.status == "PASS", result.coverage_check.messages
    assert result.priority_check.status == "PASS", result.priority_check.messages
    assert (run / "system_findings" / "cpu_idle_findings.md").is_file()
