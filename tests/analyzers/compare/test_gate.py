"""The regression gate (compare/gate.py) on generated runs with planted answers
(analyzers/synthetic/gate_pair.py): 20 GPU-bound iterations of 10 layers of GEMM, add and
softmax, 5.0 ms a step."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.compare.gate import gate_verdict
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.gate_pair import GatePlan, write_gate_trace
from rooflens.cli.main import main


@cache
def _model(plan: GatePlan, folder: str):
    return read_trace(write_gate_trace(Path(folder) / f"{hash(plan)}.json.gz", plan))[0]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("gate"))


def test_identical_runs_pass_with_no_change(folder) -> None:
    v = gate_verdict(_model(GatePlan(), folder), _model(GatePlan(seed=1), folder), 5.0)
    assert (v.verdict, v.passed, v.slowdown_pct) == ("no change above noise", True, 0.0)
    assert v.new.iterations == v.base.iterations == 20
    assert v.new.median_ms == pytest.approx(5.0, rel=0.01) and v.contributors == []


def test_an_operator_slowed_by_eight_percent_fails_the_gate_and_is_named_first(folder) -> None:
    """The softmax kernels take 40 µs more in each of 10 layers: 0.4 ms of a 5 ms step (+8 %),
    with 2 % noise on both runs."""
    base = _model(GatePlan(noise=0.02, seed=1), folder)
    new = _model(GatePlan(noise=0.02, seed=2, slow_pct=8.0), folder)
    v = gate_verdict(new, base, 5.0)
    assert (v.verdict, v.passed) == ("regression", False)
    assert v.ci_low_pct is not None and v.ci_low_pct > 5.0
    assert v.slowdown_pct == pytest.approx(8.0, abs=1.5)
    first = v.contributors[0]
    assert first.operator == "aten::_softmax"
    assert first.added_ms_per_step == pytest.approx(0.4, abs=0.05)
    assert v.categories[0].category == first.category  # the softmax's category grew most
    assert v.categories[0].added_ms_per_step == pytest.approx(0.4, abs=0.05)
    assert (v.comparability_score, v.comparability) == (100, [])  # one program, one GPU


def test_a_two_percent_slowdown_inside_five_percent_noise_is_not_beyond_noise(folder) -> None:
    base = _model(GatePlan(noise=0.05, seed=1), folder)
    new = _model(GatePlan(noise=0.05, seed=2, slow_pct=2.0), folder)
    v = gate_verdict(new, base, 5.0)
    assert (v.verdict, v.passed) == ("not beyond noise", True)
    assert v.ci_low_pct is not None and v.ci_low_pct < 0 < v.ci_high_pct  # the noise covers it
    assert v.contributors[0].operator == "aten::_softmax"


def test_a_faster_run_passes_as_faster(folder) -> None:
    v = gate_verdict(_model(GatePlan(), folder), _model(GatePlan(slow_pct=8.0), folder), 5.0)
    assert (v.verdict, v.passed) == ("faster", True)


def test_too_few_iterations_say_the_point_estimate_decided(folder) -> None:
    base = _model(GatePlan(steps=2), folder)
    new = _model(GatePlan(steps=2, slow_pct=8.0), folder)
    v = gate_verdict(new, base, 5.0)
    assert (v.verdict, v.ci_low_pct) == ("regression", None)
    assert "point estimate" in v.method


def test_the_command_exits_3_on_a_regression_and_0_otherwise(tmp_path: Path, capsys) -> None:
    base = write_gate_trace(tmp_path / "base.json.gz", GatePlan(noise=0.02, seed=1))
    new = write_gate_trace(tmp_path / "new.json.gz", GatePlan(noise=0.02, seed=2, slow_pct=8.0))
    args = ["--until", "prepared", "--gate", "5", "--json"]
    assert main(["compare", str(new), str(base), "--out", str(tmp_path / "r1"), *args]) == 3
    verdict = json.loads(capsys.readouterr().out)["gate"]
    assert verdict["verdict"] == "regression" and verdict["new"]["trace"] == "new.json.gz"
    assert verdict["contributors"][0]["operator"] == "aten::_softmax"
    assert verdict["comparability_score"] == 100
    assert main(["compare", str(base), str(base), "--out", str(tmp_path / "r2"), *args]) == 0
    assert json.loads(capsys.readouterr().out)["gate"]["passed"] is True


def test_the_verdict_carries_the_comparability_of_unlike_runs(tmp_path: Path) -> None:
    """A 2-rank compiled job against an 8-rank eager one: the gate still decides by its
    threshold, and its verdict says the runs were not like for like."""
    from rooflens.analyzers.synthetic.unlike_pair import write_unlike_pair

    compiled, eager = write_unlike_pair(tmp_path)
    v = gate_verdict(read_trace(compiled)[0], read_trace(eager)[0], 5.0)
    assert v.comparability_score < 100
    assert any("rank" in reason for reason in v.comparability)
