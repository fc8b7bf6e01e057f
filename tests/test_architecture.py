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
    "replay",
    "perf",
    "report",
    "compare",
    "prepare",
    "categories",
    "findings",
    "pipeline",
    "job",
)
FACES = ("rooflens.server", "rooflens.resources", "rooflens.prompts", "rooflens.cli")
# The command line's engine commands run without the MCP server; these two start it.
CLI_SERVER_DOORS = ("serve.py", "demo.py")
# A stage with floors of its own: each floor imports only the floors before it.
INNER_FLOORS = {"findings": ("contract", "ranking", "drafting", "composing", "validation")}
PACKAGE_DIRS = {
    "analyzers": "rooflens.analyzers",
    "cli": "rooflens.cli",
    "server": "rooflens.server",
    "resources": "rooflens.resources",
    "prompts": "rooflens.prompts",
    "entry": "rooflens",
}


def imported(path: Path, root: Path = REPO) -> Iterator[str]:
    """Every module `path` imports, at the top or inside a function; a relative import resolved
    against the package the file sits in (read from the files alone)."""
    folder, *inner = path.relative_to(root).with_suffix("").parts
    package = [*PACKAGE_DIRS.get(folder, folder).split("."), *inner]
    package = package if path.name == "__init__.py" else package[:-1]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1]
            yield ".".join([*base, *([node.module] if node.module else [])])


def modules(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def forbidden(path: Path, root: Path = REPO) -> list[str]:
    """The imports of `path` (a file of the tree at `root`) that break a rule, each with it."""
    top = path.relative_to(root).parts[0]
    broken = []
    for name in imported(path, root):
        if top == "analyzers" and (name.split(".")[0] == "mcp" or name.startswith(FACES)):
            broken.append(f"{name}: the engine imports no mcp and no face")
        elif top in ("resources", "prompts") and name.startswith("rooflens.server"):
            broken.append(f"{name}: {top} reads runs through resources/access.py")
        elif top != "cli" and name.startswith("rooflens.cli"):
            broken.append(f"{name}: nothing imports the command line")
        elif (
            top == "cli"
            and name.startswith("rooflens.server")
            and path.name not in CLI_SERVER_DOORS
        ):
            broken.append(
                f"{name}: the command line reaches the server only through serve and demo"
            )
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
    floors = INNER_FLOORS.get(mine, ())
    here = parts[1] if mine == theirs and len(parts) > 2 else None
    there = target[3] if len(target) > 3 else None
    if here in floors and there in floors and floors.index(there) > floors.index(here):
        return [f"{name}: {mine}/{here} imports the later floor {mine}/{there}"]
    return []


@pytest.mark.parametrize("folder", ["analyzers", "resources", "prompts", "server", "cli"])
def test_imports_point_one_way(folder: str) -> None:
    broken = {str(p.relative_to(REPO)): forbidden(p) for p in modules(folder)}
    assert {path: rules for path, rules in broken.items() if rules} == {}


def absolute_within(path: Path, root: Path = REPO) -> list[str]:
    """The imports of `path` that name its own top-level folder absolutely: inside a folder
    imports are relative, so a reader of the files alone (no install, no package-dir) follows
    them."""
    folder = path.relative_to(root).parts[0]
    own = PACKAGE_DIRS[folder] + "."
    return [
        node.module
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ImportFrom)
        and node.level == 0
        and (node.module or "").startswith(own)
    ]


@pytest.mark.parametrize("folder", [f for f in PACKAGE_DIRS if f != "entry"])
def test_imports_inside_a_folder_are_relative(folder: str, tmp_path: Path) -> None:
    assert {str(p.relative_to(REPO)): absolute_within(p) for p in modules(folder)} == {
        str(p.relative_to(REPO)): [] for p in modules(folder)
    }
    probe = tmp_path / "server" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("from rooflens.server.paths import PathPolicy\nfrom .runs import Run\n")
    assert absolute_within(probe, tmp_path) == ["rooflens.server.paths"]


def test_the_rules_catch_what_they_forbid(tmp_path: Path) -> None:
    probe = tmp_path / "analyzers" / "trace" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text(
        "import mcp\n"
        "from rooflens.analyzers.trace import schema\n"
        "from . import schema\n"
        "def late():\n    from ..findings.composing import plot\n"
    )
    assert forbidden(probe, tmp_path) == [
        "mcp: the engine imports no mcp and no face",
        "rooflens.analyzers.findings.composing: stage trace imports the later stage findings",
    ]
    command = tmp_path / "cli" / "job.py"
    command.parent.mkdir()
    command.write_text("from rooflens.server.runs import RunStore\nfrom .common import fail\n")
    server = tmp_path / "server" / "app.py"
    server.parent.mkdir()
    server.write_text("from rooflens.cli.main import main\n")
    assert forbidden(command, tmp_path) == [
        "rooflens.server.runs: the command line reaches the server only through serve and demo"
    ]
    assert forbidden(server, tmp_path) == ["rooflens.cli.main: nothing imports the command line"]
    floor = tmp_path / "analyzers" / "findings" / "ranking" / "probe.py"
    floor.parent.mkdir(parents=True)
    floor.write_text("from ..contract import contract\nfrom ..composing.plot import draw\n")
    assert forbidden(floor, tmp_path) == [
        "rooflens.analyzers.findings.composing.plot: findings/ranking imports the later floor"
        " findings/composing"
    ]


# --- no import cycles -------------------------------------------------------------------------
# Every import counts, at the top, inside a function or under TYPE_CHECKING: a cycle hidden in
# a function is still two modules that cannot be understood one without the other.


def module_names(root: Path = REPO) -> dict[str, Path]:
    """Import name -> file, for every module of the code folders (read from the files)."""
    found = {}
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = path.relative_to(root / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found[".".join([package, *parts])] = path
    return found


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Module -> the modules of the code folders it imports (relative imports resolved; `from
    package import module` is an edge to the module)."""
    names = module_names(root)
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets = [f"{module}.{alias.name}" for alias in node.names] + [module]
            for target in targets:
                if target in names and target != name:
                    graph[name].add(target)
                    break
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_what_it_should(tmp_path: Path) -> None:
    pkg = tmp_path / "analyzers" / "trace"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from rooflens.analyzers.trace.c import x\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n"
    )
    (pkg / "d.py").write_text("from rooflens.analyzers.trace import a\n")
    graph = import_graph(tmp_path)
    assert graph["rooflens.analyzers.trace.d"] == {"rooflens.analyzers.trace.a"}
    assert cycles(graph) == [
        ["rooflens.analyzers.trace.a", "rooflens.analyzers.trace.b", "rooflens.analyzers.trace.c"]
    ]


def test_the_engine_floors_follow_the_pipeline() -> None:
    """Drawn from the files alone, the engine's stages connect in pipeline order: every stage
    but the first imports an earlier one."""
    graph = import_graph()
    stage_of = {
        name: name.split(".")[2] for name in graph if name.startswith("rooflens.analyzers.")
    }
    edges = {
        (stage_of[a], stage_of[b])
        for a, targets in graph.items()
        for b in targets
        if a in stage_of and b in stage_of and stage_of[a] != stage_of[b]
    }
    floors = [s for s in STAGES if s not in ("synthetic", "layout")]
    for later in floors[1:]:
        earlier = floors[: floors.index(later)]
        assert any((later, e) in edges for e in earlier), f"{later} imports no earlier stage"
