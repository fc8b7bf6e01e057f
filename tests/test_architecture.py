"""Imports point one way (docs/architecture.md, "Imports point one way"): the engine never
imports mcp or a face, resources never import the server, and inside the engine a stage imports
only the stages before it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STAGES = (
    "synthetic",
    "layout",
    "trace",
    "perf",
    "report",
    "compare",
    "prepare",
    "categories",
    "findings",
    "pipeline",
    "job",
)
FACES = ("rooflens.server", "rooflens.resources", "rooflens.prompts")


def imported(path: Path) -> Iterator[str]:
    """Every module `path` imports, at the top or inside a function."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def modules(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def forbidden(path: Path, root: Path = REPO) -> list[str]:
    """The imports of `path` (a file of the tree at `root`) that break a rule, each with it."""
    top = path.relative_to(root).parts[0]
    broken = []
    for name in imported(path):
        if top == "analyzers" and (name.split(".")[0] == "mcp" or name.startswith(FACES)):
            broken.append(f"{name}: the engine imports no mcp and no face")
        elif top in ("resources", "prompts") and name.startswith("rooflens.server"):
            broken.append(f"{name}: {top} reads runs through resources/access.py")
        elif top == "analyzers":
            broken.extend(_stage_rule(path.relative_to(root / "analyzers").parts, name))
    return broken


def _stage_rule(parts: tuple[str, ...], name: str) -> list[str]:
    target = name.split(".")
    if len(parts) < 2 or target[:2] != ["rooflens", "analyzers"] or len(target) < 3:
        return []
    mine, theirs = parts[0], target[2]
    if mine in STAGES and theirs in STAGES and STAGES.index(theirs) > STAGES.index(mine):
        return [f"{name}: stage {mine} imports the later stage {theirs}"]
    return []


@pytest.mark.parametrize("folder", ["analyzers", "resources", "prompts"])
def test_imports_point_one_way(folder: str) -> None:
    broken = {str(p.relative_to(REPO)): forbidden(p) for p in modules(folder)}
    assert {path: rules for path, rules in broken.items() if rules} == {}


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    probe = tmp_path / "analyzers" / "trace" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "import mcp\n"
        "from rooflens.analyzers.trace import schema\n"
        "def late():\n    from rooflens.analyzers.findings import plot\n"
    )
    assert forbidden(probe, tmp_path) == [
        "mcp: the engine imports no mcp and no face",
        "rooflens.analyzers.findings: stage trace imports the later stage findings",
    ]
