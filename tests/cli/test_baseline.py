"""Named baselines (pipeline/baselines.py, cli/baseline.py): save a run's trace under a name,
gate a new trace against it, and refuse a baseline that is missing, renamed unsafely or edited
since it was saved. Traces: the gate's generated pair (analyzers/synthetic/gate_pair.py), the
new one 8 % slower in its softmax."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.pipeline.baselines import (
    BaselineError,
    BaselineStore,
    check_name,
    default_folder,
)
from rooflens.analyzers.synthetic.gate_pair import GatePlan, write_gate_trace
from rooflens.cli.main import main

GATE = ["--until", "prepared", "--gate", "5", "--json"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("pair")
    base = write_gate_trace(folder / "base.json.gz", GatePlan(noise=0.02, seed=1))
    new = write_gate_trace(folder / "new.json.gz", GatePlan(noise=0.02, seed=2, slow_pct=8.0))
    return base, new


def test_a_run_saved_as_a_baseline_gates_a_new_trace(pair, tmp_path: Path, capsys) -> None:
    base, new = pair
    store = tmp_path / "baselines"
    run = tmp_path / "base_run"
    assert main(["report", str(base), "--out", str(run), "--platform", "MI300X"]) == 0
    capsys.readouterr()
    assert main(["baseline", "save", "main", str(run), "--baselines", str(store), "--json"]) == 0
    saved = json.loads(capsys.readouterr().out)
    assert (saved["name"], saved["trace_file"], saved["platform"]) == ("main", base.name, "MI300X")
    assert (store / "main" / base.name).read_bytes() == base.read_bytes()

    argv = ["compare", str(new), "--baseline", "main", "--baselines", str(store)]
    assert main([*argv, "--out", str(tmp_path / "r1"), *GATE]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["gate"]["verdict"] == "regression"
    assert out["gate"]["contributors"][0]["operator"] == "aten::_softmax"
    assert out["compare_with"]["platform"] == "MI300X"  # the baseline's platform came along
    assert main(["compare", str(base), "--baseline", "main", "--baselines", str(store),
                 "--out", str(tmp_path / "r2"), *GATE]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["gate"]["passed"] is True

    assert main(["baseline", "list", "--baselines", str(store), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["baselines"]
    assert [b["name"] for b in listed] == ["main"]


def test_a_baseline_edited_since_it_was_saved_is_refused(pair, tmp_path: Path, capsys) -> None:
    base, new = pair
    store = BaselineStore(tmp_path / "b")
    store.save("nightly", base)
    copy = tmp_path / "b" / "nightly" / base.name
    data = copy.read_bytes()
    copy.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    argv = ["compare", str(new), "--baseline", "nightly", "--baselines", str(tmp_path / "b")]
    assert main([*argv, "--out", str(tmp_path / "r"), *GATE]) == 2
    assert "changed since it was saved" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()  # refused before anything is written


def test_saving_over_a_baseline_needs_force_and_swaps_it_whole(pair, tmp_path: Path) -> None:
    base, new = pair
    store = BaselineStore(tmp_path)
    store.save("main", base)
    with pytest.raises(BaselineError, match="--force"):
        store.save("main", new)
    saved = store.save("main", new, replace=True)
    record, trace = store.get("main")
    assert record == saved and trace.name == new.name and trace.read_bytes() == new.read_bytes()
    assert sorted(p.name for p in (tmp_path / "main").iterdir()) == ["baseline.json", new.name]
    assert [p.name for p in tmp_path.iterdir()] == ["main"]  # no staging or old folder left


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x" * 65, "ünï"])
def test_a_baseline_name_is_one_safe_path_component(name) -> None:
    with pytest.raises(BaselineError, match="bad baseline name"):
        check_name(name)


def test_the_commands_say_what_is_wrong_in_one_line(pair, tmp_path: Path, capsys) -> None:
    base, new = pair
    store = ["--baselines", str(tmp_path)]
    assert main(["compare", str(new), "--baseline", "none", *store, "--out", str(tmp_path / "r"),
                 *GATE]) == 2  # fmt: skip
    assert "no baseline 'none'" in capsys.readouterr().err
    assert main(["compare", str(new), str(base), "--baseline", "x", "--out", "r"]) == 2
    assert "TRACE2 or --baseline" in capsys.readouterr().err
    assert main(["baseline", "save", "a/b", str(base), *store]) == 2
    assert main(["baseline", "save", "ok", str(tmp_path / "missing.json"), *store]) == 2
    assert main(["baseline", "save", "ok", str(tmp_path), *store]) == 2  # no run.json
    err = capsys.readouterr().err
    assert "bad baseline name" in err and "run.json" in err and "Traceback" not in err
    assert main(["baseline", "remove", "ok", *store]) == 2


def test_the_default_folder_follows_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROOFLENS_BASELINES", str(tmp_path / "here"))
    assert default_folder() == tmp_path / "here"
    monkeypatch.delenv("ROOFLENS_BASELINES")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert default_folder() == tmp_path / "cache" / "rooflens" / "baselines"
