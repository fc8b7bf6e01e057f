"""Every shared trace, inference and GPU-only ones included, runs through every analysis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.server.cli import main
from tests.golden.test_every_trace import TRACES, _id


@pytest.mark.parametrize("path", TRACES, ids=_id)
def test_analyze_until_categories_runs_every_listed_analysis(
    shared: Path, path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    assert main(["analyze", str(path), "--out", str(out)]) == 0
    manifest = json.loads((out / "category_data/category_manifest.json").read_text())
    for entry in manifest["categories"]:
        metrics = json.loads((out / "category_data" / f"{entry['name']}_metrics.json").read_text())
        assert metrics.get("status", "OK") in {"OK", "SUCCESS", "NO_DATA"}, (entry["name"], metrics)
