"""Every shared trace, inference and GPU-only ones included, runs through every analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.trace.inspect import inspect_trace
from rooflens.server.cli import main
from tests.helpers.golden import shared_traces, trace_id, when_shared


@pytest.mark.parametrize("path", when_shared(shared_traces()), ids=trace_id)
def test_analyze_until_categories_runs_every_listed_analysis(
    shared: Path, path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["analyze", str(path), "--out", str(out)]
    if inspect_trace(path).health.gpu.suggested_platform is None:
        # A GPU outside the catalogue (the V100 ranks of the DLRM job): refused up front with
        # the flag to pass, and nothing written; then analysed against a named platform.
        assert main(args) == 2
        assert "--platform" in capsys.readouterr().err
        assert not out.exists()
        args += ["--platform", "A100"]
    assert main(args) == 0
    manifest = json.loads((out / "category_data/category_manifest.json").read_text())
    for entry in manifest["categories"]:
        metrics = json.loads((out / "category_data" / f"{entry['name']}_metrics.json").read_text())
        assert metrics.get("status", "OK") in {"OK", "SUCCESS", "NO_DATA"}, (entry["name"], metrics)
