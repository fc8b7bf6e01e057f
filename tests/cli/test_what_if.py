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


def test_several_traces_are_the_ranks_of_one_job(tmp_path: Path, capsys) -> None:
    """Two ranks in lockstep, rank 1's GEMMs 1.5x as long: fixing it saves rank 0's wait."""
    from rooflens.analyzers.synthetic.what_if_job import LockstepPlan, write_lockstep_job

    plan = LockstepPlan(ranks=2, steps=4, slow_rank=1, slow_factor=1.5)
    paths = [str(p) for p in write_lockstep_job(tmp_path, plan)]
    code = main(["what-if", *paths, "--change", "rank1@gpu:xmma=0.666667", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [r["rank"] for r in out["ranks"]] == [0, 1] and out["matched_collectives"] == 4
    assert all(r["replay_error_pct"] < 0.01 for r in out["ranks"])
    (fixed,) = out["changes"]
    assert fixed["saving_ms"] == pytest.approx(2.0, abs=0.01)
    assert main(["what-if", paths[0], paths[0]]) == 2
    assert "a second trace of rank 0" in capsys.readouterr().err
    assert main(["what-if", *paths]) == 0
    assert "2 ranks replayed together over 4 matched collectives" in capsys.readouterr().out
