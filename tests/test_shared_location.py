"""How the suite finds the reference data folder, and what a missing one does to a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.golden import (
    MISSING,
    MISSING_IN_CI,
    NO_SHARED,
    REPO,
    require_shared,
    shared_dir,
    when_shared,
)


def test_an_empty_or_missing_folder_is_no_reference_data(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ROOFLENS_SHARED", str(tmp_path))
    assert shared_dir() is None  # a folder without traces/
    monkeypatch.setenv("ROOFLENS_SHARED", str(tmp_path / "nowhere"))
    assert shared_dir() is None
    (tmp_path / "traces").mkdir()
    monkeypatch.setenv("ROOFLENS_SHARED", str(tmp_path))
    assert shared_dir() == tmp_path


def test_without_the_variable_it_is_the_shared_folder_next_to_the_repository(monkeypatch):
    monkeypatch.delenv("ROOFLENS_SHARED", raising=False)
    beside = REPO.parent / "shared"
    assert shared_dir() == (beside if (beside / "traces").is_dir() else None)


def test_a_missing_folder_skips_locally_and_fails_under_ci(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ROOFLENS_SHARED", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="set ROOFLENS_SHARED"):
        require_shared()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="missing in CI"):
        require_shared()
    assert MISSING != MISSING_IN_CI


def test_parameters_over_missing_reference_data_become_one_placeholder(tmp_path, monkeypatch):
    """So the test still asks for `shared` and is skipped (or failed under CI), instead of
    being reported as an empty parameter set, which no CI would notice."""
    monkeypatch.setenv("ROOFLENS_SHARED", str(tmp_path))
    (placeholder,) = when_shared([Path("a"), Path("b")])
    assert placeholder.id == NO_SHARED and placeholder.values == (None,)
    (tmp_path / "traces").mkdir()
    assert when_shared([Path("a"), Path("b")]) == [Path("a"), Path("b")]
