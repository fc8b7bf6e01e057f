"""Trace text stays data in every Markdown file `rooflens analyze` writes: the injection corpus
(devkit/injection.py) names every operator, kernel, module, frame, input type, stream, thread,
process and device with a hostile string, and the platform file and categories TOML name the
platform and two categories so too. After the run, no hostile text renders as anything but a
code span, the reports keep the structure rooflens wrote, and `rooflens validate` passes.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import unicodedata
from pathlib import Path

import pytest

from devkit.injection import (
    HOSTILE,
    MARK,
    write_hostile_categories,
    write_hostile_platform,
    write_injection_trace,
)
from rooflens.analyzers.findings.composing.compose import OPTIONAL_SECTIONS, SECTIONS
from rooflens.analyzers.findings.composing.html_page import SCRIPT
from rooflens.analyzers.findings.contract.contract import split_row
from rooflens.analyzers.findings.contract.validate import validate_findings_file
from rooflens.analyzers.findings.drafting.drafts import tier_for
from rooflens.analyzers.markdown_text import without_code_spans
from rooflens.cli.main import main
from tests.helpers.html_safety import PageTags
from tests.helpers.markdown_safety import headings, leaks

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

P_HEADING = re.compile(r"^(?:\S+ )?P(\d+): ")
CARD_SECTIONS = (
    "Compute Kernel Optimizations",
    "Kernel Fusion Opportunities (Experimental)",
    "System-Level Optimizations",
)


@pytest.fixture(scope="module", params=["sample", "blocking"])
def run(request, tmp_path_factory) -> tuple[Path, str]:
    """The run folder of `rooflens analyze` on the hostile trace and user files, and what
    the command printed."""
    folder = tmp_path_factory.mktemp(f"injection_{request.param}")
    trace = write_injection_trace(folder / "hostile.json.gz", base=request.param)
    platform = write_hostile_platform(folder / "platform.json")
    categories = write_hostile_categories(folder / "categories.toml", base=request.param)
    out = folder / "run"
    args = ["analyze", str(trace), "--platform-file", str(platform)]
    args += ["--categories", str(categories), "--out", str(out)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(args) == 0
    return out, printed.getvalue()


def line_starts(text: str, prefix: str) -> int:
    return sum(line.startswith(prefix) for line in text.splitlines())


def markdown_files(out: Path) -> list[Path]:
    found = [out / "analysis.md", *sorted(out.glob("*_findings/*_findings.md"))]
    assert len(found) >= 5 and all(p.is_file() for p in found)
    return found


def test_the_corpus_is_hostile_where_it_matters(run) -> None:
    """The hostile names reached what the reports are written from: the operations' kernels,
    a finding's title, and (sample) a category and the Data tables' args."""
    out, _ = run
    assert all(MARK in text for text in HOSTILE)
    metrics = json.loads((out / "category_data" / "gemm_metrics.json").read_text())
    ops = metrics["operations"]
    assert any(MARK in str(op.get("kernel_name_trunc")) for op in ops)
    items = json.loads((out / "priority_data.json").read_text())["priorities"]
    assert any(MARK in item["title"] for item in items)
    if out.parent.name.startswith("injection_sample"):
        manifest = (out / "category_data" / "category_manifest.json").read_text(encoding="utf-8")
        assert MARK in manifest  # a hostile category made it into the run
        assert any(MARK in str(op.get("args")) and MARK in str(op.get("name")) for op in ops)


def test_no_hostile_text_renders_outside_a_code_span(run) -> None:
    out, _ = run
    for path in markdown_files(out):
        text = path.read_text(encoding="utf-8")
        assert leaks(text, [MARK]) == [], path.name
        for number, line in enumerate(text.splitlines(), 1):
            bare = without_code_spans(line)
            assert MARK not in bare, (path.name, number, line)
            assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in line), (
                path.name,
                number,
            )


def test_the_report_keeps_the_structure_rooflens_wrote(run) -> None:
    out, _ = run
    text = (out / "analysis.md").read_text(encoding="utf-8")
    found = headings(text)
    assert [level for level, _ in found].count(1) == 1
    second = [name for level, name in found if level == 2]
    assert [s for s in second if s not in OPTIONAL_SECTIONS] == list(SECTIONS)
    items = json.loads((out / "priority_data.json").read_text())["priorities"]
    cards, section = [], None
    for level, name in found:
        if level == 2:
            section = name
        elif level == 3 and section in CARD_SECTIONS and (m := P_HEADING.match(name)):
            cards.append(int(m.group(1)))
    # one card per item, numbered once across the report; system cards no item ranks after
    assert sorted(cards) == list(range(1, len(cards) + 1)) and len(cards) >= len(items)
    assert line_starts(text, "<!-- impact-begin kind=p_item") == len(cards)
    details = [n for level, n in found if level == 4 and P_HEADING.match(n)]
    assert len(details) == len(cards)


def test_every_findings_file_keeps_its_sections_and_validates(run) -> None:
    out, _ = run
    for path in markdown_files(out)[1:]:
        text = path.read_text(encoding="utf-8")
        found = headings(text)
        assert [level for level, _ in found].count(1) == 1, path.name
        assert [n for level, n in found if level == 2] == ["Recommendations", "Detailed Analysis"]
        cards = [n for level, n in found if level == 3]
        assert all(P_HEADING.match(n) for n in cards), path.name
        assert line_starts(text, "<!-- reasoning-candidate") == len(cards), path.name
        key = path.name.removesuffix("_findings.md")
        assert validate_findings_file(path, tier_for(key)) == [], path.name


def test_rooflens_validate_passes(run, capsys) -> None:
    out, _ = run
    assert main(["validate", str(out)]) == 0
    assert "All checks passed." in capsys.readouterr().out


def test_what_the_command_printed_is_plain_lines(run) -> None:
    _, printed = run
    assert printed.count("\n") == len(printed.splitlines())
    for line in printed.splitlines():
        assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in line), line
        assert not line.startswith(("#", "<", "|", "=", "INJECTED")), line


def test_module_names_are_visible_lines(run) -> None:
    """`metadata/nn_modules.txt` (one module class per line, read by the model
    identification): no control or format character survives in a line."""
    out, _ = run
    lines = (out / "metadata" / "nn_modules.txt").read_text(encoding="utf-8").splitlines()
    assert lines
    for line in lines:
        assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in line), line


def test_every_table_keeps_its_columns(run) -> None:
    """Each row of each pipe table has as many cells as its header: no name split a row."""
    out, _ = run
    for path in markdown_files(out):
        width = None
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.startswith("|"):
                width = None
                continue
            cells = split_row(re.sub(r"\s*<!--[^>]*-->$", "", line))  # Top Operations' marker
            width = width or len(cells)
            assert len(cells) == width, (path.name, number, line)


def test_the_page_holds_every_hostile_name_as_text(run) -> None:
    """`analysis.html` (docs/analysis.md#the-page): the page's own script is its only one, no
    element of it has an event handler, nothing is linked outside it, and the hostile names
    that reach it are there as text."""
    out, _ = run
    page = (out / "analysis.html").read_text(encoding="utf-8")
    tags = PageTags(page)
    assert tags.scripts == [SCRIPT] and tags.handlers == []
    assert all(v.startswith(("#", "data:image/png")) for v in tags.links)
    assert MARK in page  # the names are there, as data
