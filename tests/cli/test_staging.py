"""`staged_output`, which every CLI run writes through: what it does with the leftovers of
killed runs and with the staging folder of a run still going on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rooflens.analyzers.pipeline.ledger import OLD_MARK, STAGING_MARK, staged_output


def names(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir())


def test_success_swaps_the_new_folder_in_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.txt").write_text("earlier run")
    with staged_output(out) as stage:
        (stage / "new.txt").write_text("this run")
    assert names(out) == ["new.txt"]
    assert names(tmp_path) == ["run"]


def test_failure_removes_the_staging_folder_and_keeps_the_earlier_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "old.txt").write_text("earlier run")
    with pytest.raises(KeyboardInterrupt), staged_output(out) as stage:
        (stage / "half.txt").write_text("half")
        raise KeyboardInterrupt
    assert names(out) == ["old.txt"]
    assert names(tmp_path) == ["run"]


def test_a_run_killed_between_its_renames_gets_the_earlier_run_back(tmp_path: Path) -> None:
    """The earlier run was set aside and the new one not yet renamed in: the next run puts
    the earlier one back before it starts, instead of sweeping it away."""
    (tmp_path / f".run{OLD_MARK}dead").mkdir()
    (tmp_path / f".run{OLD_MARK}dead" / "old.txt").write_text("earlier run")
    (tmp_path / f".run{STAGING_MARK}killed").mkdir()
    with pytest.raises(RuntimeError), staged_output(tmp_path / "run"):
        assert names(tmp_path / "run") == ["old.txt"]
        raise RuntimeError("this run fails too")
    assert names(tmp_path) == ["run"]
    assert names(tmp_path / "run") == ["old.txt"]


def test_the_staging_folder_of_a_live_run_is_not_swept(tmp_path: Path) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f".run{STAGING_MARK}{other.pid}-abcd"
        live.mkdir()
        dead = tmp_path / f".run{STAGING_MARK}killed"
        dead.mkdir()
        with staged_output(tmp_path / "run") as stage:
            (stage / "new.txt").write_text("this run")
        assert live.is_dir() and not dead.exists()
    finally:
        other.kill()
        other.wait()
    with staged_output(tmp_path / "run"):
        pass
    assert names(tmp_path) == ["run"]  # its process gone, it is a leftover like any other
