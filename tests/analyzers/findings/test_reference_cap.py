"""In a comparative run an idle item saves no more than trace 2 shows avoidable: trace 1
waits 20 ms for its loader each step, trace 2 15 ms (analyzers/synthetic/what_if.py), so at
most 5 ms a step is the difference, over the 7 iterations the comparison measures, 35 ms;
standalone the same item claims most of the loader's 20 ms a step (92 ms)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace
from rooflens.cli.main import main


def _idle_items(out: Path, capsys, *args: str) -> list[dict]:
    assert main([*args, "--out", str(out), "--until", "aggregated", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["priorities"]
    return [p for p in found if p["category"] == "cpu_idle"]


def test_the_idle_item_is_capped_by_what_trace_2_avoids(tmp_path: Path, capsys) -> None:
    one = write_step_trace(tmp_path / "l20.json.gz", StepPlan(loader_us=20_000.0))
    two = write_step_trace(tmp_path / "l15.json.gz", StepPlan(loader_us=15_000.0))
    compared = _idle_items(tmp_path / "c", capsys, "compare", str(one), str(two))
    loader = compared[0]
    assert "data loader" in loader["title"]
    assert loader["saving"]["cap_ms"] == pytest.approx(35.0, abs=0.01)
    assert loader["saving"]["high_ms"] == pytest.approx(35.0, abs=0.01)
    assert "what trace 2 shows avoidable" in loader["saving"]["basis"]
    alone = _idle_items(tmp_path / "a", capsys, "analyze", str(one))
    assert alone[0]["saving"]["high_ms"] > 90.0  # most of the loader's 20 ms a step, replayed
