"""The design lives in docs/: comments and pages point there, and every pointer resolves.

- No tracked file outside tests/ holds a "§" (section numbers of specs outside the repository)
  or names those specs.
- Every relative Markdown link in a tracked .md file names an existing file and, with a
  `#fragment`, an existing heading of it (GitHub-style anchors).
- Every `docs/<page>.md#anchor` pointer in a tracked file outside tests/ (code comments,
  docstrings, README, docs) names an existing page and heading.
- Every docs page is linked from the table of docs/architecture.md.

The checker is tested on planted pages in a temporary folder, so a broken link cannot pass
because the checker looks at nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.helpers.tracked import tracked_files

ROOT = Path(__file__).resolve().parents[1]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
POINTER = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)(?:#([\w-]+))?")
SPEC_NAMES = re.compile(r"\b(?:perf_report|agent_workflow|mcp_sdk)\.md\b|shared/specs")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def slug(heading: str) -> str:
    """GitHub's anchor for a heading text: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def prose_lines(text: str) -> Iterable[tuple[int, str]]:
    """(1-based line number, line) of a Markdown text outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text, duplicates numbered as GitHub does (-1, -2)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _target_problem(target: Path, fragment: str | None, root: Path) -> str | None:
    """Why `target#fragment` does not resolve, or None when it does."""
    target = Path(os.path.normpath(target))
    if not target.is_relative_to(root):
        return f"{target} lies outside the repository"
    name = target.relative_to(root)
    if not target.exists():
        return f"{name} is missing"
    text = target.read_text(encoding="utf-8") if target.suffix == ".md" else ""
    if fragment and text and fragment not in anchors(text):
        return f"{name} has no heading with anchor #{fragment}"
    return None


def link_problems(md: Path, root: Path) -> list[str]:
    """Relative Markdown links of one .md file (outside code) that do not resolve."""
    problems = []
    for number, line in prose_lines(md.read_text(encoding="utf-8")):
        for match in LINK.finditer(CODE_SPAN.sub("", line)):
            href = match.group(1)
            if EXTERNAL.match(href):
                continue
            path, _, fragment = href.partition("#")
            target = (md.parent / path) if path else md
            problem = _target_problem(target, fragment or None, root)
            if problem:
                problems.append(f"{md.relative_to(root)}:{number}: [{href}]: {problem}")
    return problems


def pointer_problems(source: Path, root: Path) -> list[str]:
    """`docs/<page>.md[#anchor]` pointers of one file that do not resolve (paths from root)."""
    problems = []
    text = source.read_text(encoding="utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        for match in POINTER.finditer(line):
            page, fragment = match.groups()
            problem = _target_problem(root / "docs" / page, fragment, root)
            if problem:
                problems.append(f"{source.relative_to(root)}:{number}: {match.group(0)}: {problem}")
    return problems


def architecture_problems(root: Path) -> list[str]:
    """Docs pages that docs/architecture.md's table does not link."""
    table = [
        line
        for _, line in prose_lines((root / "docs" / "architecture.md").read_text(encoding="utf-8"))
        if line.lstrip().startswith("|")
    ]
    linked = {m.group(1).partition("#")[0] for line in table for m in LINK.finditer(line)}
    pages = sorted(p.name for p in (root / "docs").glob("*.md") if p.name != "architecture.md")
    return [f"docs/{page} is not linked from docs/architecture.md's table" for page in pages
            if page not in linked]  # fmt: skip


def _is_text(path: Path) -> bool:
    return b"\0" not in path.read_bytes()[:8192]


@pytest.fixture(scope="module")
def outside_tests() -> list[Path]:
    return [
        p for p in tracked_files(ROOT) if p.relative_to(ROOT).parts[0] != "tests" and _is_text(p)
    ]


def test_no_section_signs_outside_tests(outside_tests: list[Path]) -> None:
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in outside_tests
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if "§" in line
    ]
    assert hits == [], "point to docs/<page>.md#<anchor> instead:\n" + "\n".join(hits)


def test_no_pointers_to_specs_outside_the_repository(outside_tests: list[Path]) -> None:
    hits = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in outside_tests
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if SPEC_NAMES.search(line)
    ]
    assert hits == [], "point to docs/<page>.md#<anchor> instead:\n" + "\n".join(hits)


def test_markdown_links_resolve() -> None:
    pages = [p for p in tracked_files(ROOT) if p.suffix == ".md"]
    assert ROOT / "README.md" in pages and ROOT / "docs" / "architecture.md" in pages
    problems = [problem for page in pages for problem in link_problems(page, ROOT)]
    assert problems == [], "\n".join(problems)


def test_docs_pointers_resolve(outside_tests: list[Path]) -> None:
    problems = [problem for p in outside_tests for problem in pointer_problems(p, ROOT)]
    assert problems == [], "\n".join(problems)


def test_pointers_are_in_use(outside_tests: list[Path]) -> None:
    """The pointer check looks at real pointers: the engine's comments carry dozens of them."""
    engine = [p for p in outside_tests if p.relative_to(ROOT).parts[0] == "analyzers"]
    count = sum(len(POINTER.findall(p.read_text(encoding="utf-8"))) for p in engine)
    assert count >= 50


def test_every_docs_page_is_in_the_architecture_table() -> None:
    assert architecture_problems(ROOT) == []


# The checker itself, on planted pages.


def test_slug_follows_github() -> None:
    assert slug("`nn.Module` counters in call stacks") == "nnmodule-counters-in-call-stacks"
    assert slug("Rule B: unified ops") == "rule-b-unified-ops"
    assert slug("unified_perf_summary") == "unified_perf_summary"
    assert slug("Reduce, normalisation") == "reduce-normalisation"
    assert slug("`run.json`") == "runjson"
    assert slug("Triton / Inductor kernels") == "triton--inductor-kernels"


def test_anchors_skip_code_and_number_duplicates() -> None:
    text = "# Top\n## Notes\n```\n# not a heading\n```\n### Notes\n## Notes ##\n"
    assert anchors(text) == {"top", "notes", "notes-1", "notes-2"}


def _plant(root: Path) -> None:
    docs = root / "docs"
    docs.mkdir()
    (docs / "architecture.md").write_text(
        "# Architecture\n\n| page | what |\n| --- | --- |\n| [trace.md](trace.md) | trace |\n",
        encoding="utf-8",
    )
    (docs / "trace.md").write_text(
        "# Trace\n\n## Linking\n\nSee [the tree](#host-call-tree) and "
        "[architecture](architecture.md#architecture); `[x](nowhere.md)` is code.\n\n"
        "## Host call tree\n\n```\n[fenced](missing.md)\n```\n",
        encoding="utf-8",
    )
    (root / "good.py").write_text('"""Links (docs/trace.md#linking)."""\n', encoding="utf-8")


def test_checker_accepts_good_pages(tmp_path: Path) -> None:
    _plant(tmp_path)
    for page in (tmp_path / "docs").glob("*.md"):
        assert link_problems(page, tmp_path) == []
    assert pointer_problems(tmp_path / "good.py", tmp_path) == []
    assert architecture_problems(tmp_path) == []


def test_checker_catches_planted_breaks(tmp_path: Path) -> None:
    _plant(tmp_path)
    bad = tmp_path / "bad.py"
    bad.write_text(
        "# see docs/trace.md#linkin and docs/gone.md\n# fine: docs/trace.md#host-call-tree\n",
        encoding="utf-8",
    )
    problems = pointer_problems(bad, tmp_path)
    assert problems == [
        "bad.py:1: docs/trace.md#linkin: docs/trace.md has no heading with anchor #linkin",
        "bad.py:1: docs/gone.md: docs/gone.md is missing",
    ]

    page = tmp_path / "docs" / "extra.md"
    page.write_text(
        "# Extra\n\n[ok](trace.md#linking) [broken](trace.md#links) [gone](../nowhere.md) "
        "[self](#extra) [lost](#nothing) [web](https://example.com/x.md#y)\n",
        encoding="utf-8",
    )
    problems = link_problems(page, tmp_path)
    assert problems == [
        "docs/extra.md:3: [trace.md#links]: docs/trace.md has no heading with anchor #links",
        "docs/extra.md:3: [../nowhere.md]: nowhere.md is missing",
        "docs/extra.md:3: [#nothing]: docs/extra.md has no heading with anchor #nothing",
    ]
    assert architecture_problems(tmp_path) == [
        "docs/extra.md is not linked from docs/architecture.md's table"
    ]
