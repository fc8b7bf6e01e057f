"""The path policy: containment on real paths, each refusal its own message."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rooflens.server.paths import PathPolicy, PathRefused


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs2").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "runs" / "trace.json").write_text("{}")
    (tmp_path / "runs2" / "other.json").write_text("{}")
    (tmp_path / "outside" / "secret.json").write_text("{}")
    (tmp_path / "runs" / "link.json").symlink_to(tmp_path / "outside" / "secret.json")
    (tmp_path / "runs" / "linkdir").symlink_to(tmp_path / "outside")
    return tmp_path


CASES = [
    # (id, relative path, must_exist, expected (None = allowed), refusal text)
    ("existing file", "runs/trace.json", True, "runs/trace.json", None),
    ("new file in allowed dir", "runs/new.json", False, "runs/new.json", None),
    ("traversal with ..", "runs/../outside/secret.json", True, None, "outside the allowed"),
    ("sibling prefix", "runs2/other.json", True, None, "outside the allowed"),
    ("symlink escape", "runs/link.json", True, None, "outside the allowed"),
    ("new file under symlinked dir", "runs/linkdir/new.json", False, None, "outside the allowed"),
    ("missing file", "runs/missing.json", True, None, "does not exist"),
    ("NUL byte", "runs/tr\0ace.json", True, None, "NUL byte"),
]


@pytest.mark.parametrize(
    ("rel", "must_exist", "expected", "refusal"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_resolve(tree: Path, rel: str, must_exist: bool, expected, refusal) -> None:
    policy = PathPolicy([tree / "runs"])
    target = str(tree / rel)
    if refusal is None:
        assert (
            policy.resolve(target, must_exist=must_exist) == Path(os.path.realpath(tree)) / expected
        )
    else:
        with pytest.raises(PathRefused, match=refusal) as info:
            policy.resolve(target, must_exist=must_exist)
        if refusal != "NUL byte":
            assert str(Path(os.path.realpath(tree / "runs"))) in str(info.value)


def test_relative_path_is_taken_from_the_first_allowed_dir(tree: Path) -> None:
    policy = PathPolicy([tree / "runs"])
    assert policy.resolve("trace.json", must_exist=True).name == "trace.json"


def test_from_env_and_args(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOFLENS_ALLOWED_DIRS", os.pathsep.join([str(tree / "runs"), ""]))
    policy = PathPolicy.from_env_and_args([str(tree / "runs2")])
    assert policy.allowed == [Path(os.path.realpath(tree / d)) for d in ("runs", "runs2")]


def test_defaults_to_current_folder(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROOFLENS_ALLOWED_DIRS", raising=False)
    monkeypatch.chdir(tree / "runs")
    assert PathPolicy.from_env_and_args(None).allowed == [Path(os.path.realpath(tree / "runs"))]


@pytest.mark.parametrize("where", ["root", "home"])
def test_the_implicit_folder_may_not_be_the_whole_disk_or_home(
    where: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from rooflens.server.paths import ENV_VAR, BroadRoot

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir("/" if where == "root" else tmp_path)
    with pytest.raises(BroadRoot, match="--allow-dir"):
        PathPolicy.from_env_and_args([])
    assert PathPolicy.from_env_and_args([], broad=True).allowed == [Path(os.path.realpath("."))]
    named = PathPolicy.from_env_and_args([str(tmp_path / "..")])  # named on purpose: allowed
    assert named.allowed == [Path(os.path.realpath(tmp_path.parent))]
