"""`analysis.html` (docs/analysis.md#the-page): one self-contained page whose trace text is
data. A generated loop with hostile names planted (a `<script>` operator and DataLoader
annotation, an `<img onerror>` kernel) is analysed; the page is read as HTML, then opened in
headless Chromium (Debian's package; `.ci/run` installs it): no console error, no script of
the trace's runs, P1 and the plot are visible, a header click sorts the table."""

from __future__ import annotations

import base64
import html
import os
from pathlib import Path

import pytest

import rooflens
from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.html_page import CSP, SCRIPT
from tests.helpers.findings_trace import write_findings_trace
from tests.helpers.html_safety import PageTags

HOSTILE_OP = "<script>alert(1)</script>"
HOSTILE_KERNEL = '<img src=x onerror="window.__pwned=1"> add_kernel'
CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("page")
    trace = write_findings_trace(
        folder / "hostile.json.gz",
        slow_kernel=HOSTILE_KERNEL,
        extra_op=HOSTILE_OP,
        loader=f"{HOSTILE_OP} DataLoader.__next__",
    ).path
    analysed = rooflens.analyze(trace, platform="H100_SXM")
    return analysed, analysed.save(folder / "run")


def test_the_page_holds_the_hostile_names_as_text_and_runs_only_its_own_script(run) -> None:
    _, folder = run
    page = (folder / layout.REPORT_HTML).read_text("utf-8")
    assert html.escape(HOSTILE_OP) in page and html.escape(HOSTILE_KERNEL) in page
    assert HOSTILE_OP not in page and "<img src=x" not in page
    tags = PageTags(page)
    assert tags.scripts == [SCRIPT]  # the page's own sorting script, nothing else
    assert tags.handlers == []
    images = [attrs for tag, attrs in tags.tags if tag == "img"]
    assert [a["src"][:22] for a in images] == ["data:image/png;base64,"]  # the plot
    assert all(v.startswith(("#", "data:image/png")) for v in tags.links)  # nothing fetched
    (policy,) = [
        a["content"] for t, a in tags.tags if a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy == CSP and "script-src 'sha256-" in policy and "default-src 'none'" in policy


def test_every_p_item_links_to_its_card_and_the_plot_is_the_runs(run) -> None:
    analysed, folder = run
    page = (folder / layout.REPORT_HTML).read_text("utf-8")
    numbers = [i.p_number for i in analysed.priorities.priorities]
    assert numbers == [1, 2, 3, 4, 5]
    for n in numbers:
        assert f"href='#p{n}'" in page and f"id='p{n}'" in page
    plot = (folder / layout.PLOT).read_bytes()
    assert base64.b64encode(plot).decode("ascii") in page
    assert page.count("<svg class='strip'") == 4  # one strip per iteration


def _chromium():
    """Playwright's sync API, or a skip (a developer machine) / failure (CI) saying why."""
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed (pip install -e '.[test]')"
    if missing is None and not CHROMIUM.is_file():
        missing = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"the browser test must run in CI: {missing}")
        pytest.skip(missing)
    return sync_playwright


@pytest.mark.slow  # starts a browser
def test_the_page_in_a_headless_browser(run, tmp_path: Path) -> None:
    analysed, folder = run
    sync_playwright = _chromium()
    savings = [(i.saving.mid_ms if i.saving else -1.0, i.p_number)
               for i in analysed.priorities.priorities]  # fmt: skip
    ascending = [f"P{n}" for _, n in sorted(savings)]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            dialogs: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto((folder / layout.REPORT_HTML).as_uri())
            page.wait_for_load_state("load")
            assert page.locator("#p1").is_visible()
            assert page.locator("#p1 h3").inner_text().startswith("P1: The GPU sat idle")
            assert page.locator("#plot-image").is_visible()
            assert page.evaluate("document.getElementById('plot-image').naturalWidth") > 600
            cells = page.locator("#priority-table tbody tr td:first-child")
            assert cells.all_inner_texts() == ["P1", "P2", "P3", "P4", "P5"]
            header = page.locator("#priority-table th", has_text="Saving, mid")
            header.click()
            assert cells.all_inner_texts() == ascending
            assert header.get_attribute("aria-sort") == "ascending"
            header.click()
            assert cells.all_inner_texts() == ascending[::-1]
            page.locator("#priority-table a[href='#p2']").click()
            assert page.evaluate("location.hash") == "#p2"
            assert page.evaluate("window.__pwned === undefined")
            shot = tmp_path / "analysis.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == [] and dialogs == []
    assert shot.stat().st_size > 50_000
