"""`rooflens what-if`: a run or a trace replayed, its critical path and the step after each
change, on generated steps with a planted 20 ms loader in front of a starved GPU
(analyzers/synthetic/what_if.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.idle import LOADER_NAMES
from rooflens.analyzers.synthetic.kernels import NV_GEMM
from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace
from rooflens.cli.main import main

LOADER = LOADER_NAMES[False]


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_step_trace(tmp_path / "steps.json.gz", StepPlan(loader_us=20_000.0))


def test_the_json_names_the_path_and_prices_each_change(trace: Path, capsys) -> None:
    code = main(
        [
            "what-if",
            str(trace),
            "--change",
            "host:DataLoader=0",
            "--change",
            "gpu:xmma=0.5",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["measured_step_ms"] == pytest.approx(28.024, abs=0.001)
    assert out["replay_error_pct"] < 0.01 and len(out["iterations"]) == 8
    top = out["critical_path"][0]
    assert (top["kind"], top["name"]) == ("host_work", LOADER)
    loader, gemms = out["changes"]
    assert loader["spec"] == "host:DataLoader=0" and loader["events"] == 8
    assert loader["saving_ms"] == pytest.approx(20.0, abs=0.01)
    assert loader["critical_next"][0]["name"] == NV_GEMM  # the GEMMs set the step next
    assert gemms["events"] == 8 * 40 and gemms["saving_ms"] == pytest.approx(4.0, abs=0.01)
    both = out["combined"]
    assert both["predicted_step_ms"] == pytest.approx(28.024 - 24.0, abs=0.01)
    assert {a["rule"] for a in out["assumptions"]} >= {
        "a call that returned right after a GPU event ended waited for it"
    }


def test_a_run_folder_replays_its_own_trace(trace: Path, tmp_path: Path, capsys) -> None:
    assert main(["analyze", str(trace), "--out", str(tmp_path / "run"), "--until", "prepared"]) == 0
    capsys.readouterr()
    assert main(["what-if", str(tmp_path / "run")]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Step       measured 28.024 ms, replayed 28.024 ms")
    assert f"  host_work          20.008 ms   71.4 %  {LOADER}\n" in text


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("gpu:gemm", "cannot read the change 'gpu:gemm'"),
        ("gpu:no such kernel=0.5", "matches no GPU event"),
        ("host:DataLoader=2", "host time can only be kept in part"),
        ("op:aten::nothing=0.5", "matches no GPU event"),
    ],
)
def test_a_change_that_cannot_be_applied_is_a_clear_error(trace: Path, spec, says, capsys):
    assert main(["what-if", str(trace), "--change", spec]) == 2
    assert says in capsys.readouterr().err
