"""The layout rules of the test suite, checked on the source.

* A test module never imports another test module or a conftest: what tests share lives in
  tests/conftest.py (fixtures) or in the helpers package tests/helpers/.
* Only tests/golden/ needs the reference data folder (the `shared` fixture): a clean clone
  without it skips the golden tests and runs every other one.
* Benchmarks and devkit/ never import tests/: code both use lives in devkit/.
* devkit/ is not shipped in the wheel.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HELPERS = "tests.helpers"


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative ones resolved."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    yield from imports_of(path.read_text(encoding="utf-8"), package)


def imports_of(source: str, package: list[str]) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in `source`, a module of `package`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if node.module is None:  # `from . import x`: x is a module of that package
                for alias in node.names:
                    yield node.lineno, f"{module}.{alias.name}"
            else:
                yield node.lineno, module


def is_tests(name: str) -> bool:
    return name == "tests" or name.startswith("tests.")


def is_helpers(name: str) -> bool:
    return name == HELPERS or name.startswith(HELPERS + ".")


def sources(folder: str) -> list[Path]:
    return sorted(p for p in (REPO / folder).rglob("*.py") if "data" not in p.parts)


def offences(folder: str, allowed) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in sources(folder)
        for line, name in imported(path)
        if is_tests(name) and not allowed(name)
    ]


def test_no_test_module_imports_another_test_module() -> None:
    assert sources("tests")
    assert offences("tests", is_helpers) == []


@pytest.mark.parametrize("folder", ["benchmarks", "devkit"])
def test_benchmarks_and_devkit_do_not_import_tests(folder: str) -> None:
    assert sources(folder)
    assert offences(folder, lambda name: False) == []


def test_the_rule_sees_every_form_of_import() -> None:
    source = """
import tests.golden.test_perf_report
from tests.server.conftest import call
from .test_cli import main
from . import test_demo
from ..prompts.test_prompts import CALLED
from tests.helpers.mcp_client import call
from ..helpers import golden

def later():
    from tests.analyzers.trace.conftest import TraceBuilder
"""
    names = [name for _, name in imports_of(source, ["tests", "server"])]
    assert [n for n in names if is_tests(n) and not is_helpers(n)] == [
        "tests.golden.test_perf_report",
        "tests.server.conftest",
        "tests.server.test_cli",
        "tests.server.test_demo",
        "tests.prompts.test_prompts",
        "tests.analyzers.trace.conftest",
    ]


def test_devkit_is_not_in_the_wheel() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    shipped = [*setuptools["packages"], *setuptools["package-dir"].values()]
    assert shipped and not any(p == "devkit" or p.startswith("devkit.") for p in shipped)


def test_every_code_folder_is_a_shipped_package() -> None:
    """A package folder left out of pyproject's list is missing from the wheel (an editable
    install does not notice)."""
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    folders = {folder: name for name, folder in setuptools["package-dir"].items()}
    found = set()
    for folder, name in folders.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            found.add(".".join([name, *parts]))
    assert found - set(setuptools["packages"]) == set()


# the locator itself is tested outside golden/ (on folders it makes)
LOCATOR_TESTS = {"tests/test_shared_location.py", "tests/conftest.py", "tests/helpers/golden.py"}
SHARED_CALLS = {"shared_dir", "require_shared"}


def shared_uses(path: Path) -> Iterator[tuple[int, str]]:
    """(line, what) for each function taking `shared` and each call of the locator."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if "shared" in {a.arg for a in node.args.args + node.args.kwonlyargs}:
                yield node.lineno, f"{node.name} takes the shared fixture"
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in SHARED_CALLS:
            yield node.lineno, f"calls {node.func.id}()"


def test_only_golden_tests_need_the_reference_data() -> None:
    found = [
        f"{rel}:{line} {what}"
        for path in sources("tests")
        if not (rel := path.relative_to(REPO).as_posix()).startswith("tests/golden/")
        and rel not in LOCATOR_TESTS
        for line, what in shared_uses(path)
    ]
    assert found == []
    assert any(shared_uses(REPO / "tests/golden/test_every_trace.py"))
