"""analysis.md composed for real run folders passes validate_report and copies priority numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.findings.contract.contract import BEGIN_RE, Marker
from rooflens.analyzers.findings.contract.validate import validate_findings_file
from rooflens.analyzers.findings.drafting.drafts import tier_for
from rooflens.analyzers.findings.validation.analysis_checks import validate_report
from rooflens.cli.main import main
from tests.helpers.golden import REFERENCE_FOLDERS, trace_path

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

# every shared trace with a TraceLens reference, the GPU-only MI210 one included
FOLDERS = REFERENCE_FOLDERS


@pytest.fixture(scope="module", params=FOLDERS)
def run(request, shared, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / request.param
    assert main(["analyze", str(trace_path(shared, request.param)), "--out", str(out)]) == 0
    return out


def test_every_findings_file_validates(run):
    files = sorted(run.glob("*_findings/*_findings.md"))
    assert files  # at least cpu_idle
    for path in files:
        key = path.name.removesuffix("_findings.md")
        assert validate_findings_file(path, tier_for(key)) == [], path.name


def _card_markers(text: str) -> dict[int, dict[str, str]]:
    """The p_item markers of the three card sections, by their P-number."""
    cards = text.split("## Compute Kernel Optimizations", 1)[1].split("## Detailed Analysis")[0]
    found = [Marker.parse(ln) for ln in cards.splitlines() if BEGIN_RE.match(ln)]
    return {int(m.attr("p") or 0): dict(m.attrs) for m in found if m and m.kind == "p_item"}


def test_report_validates(run):
    assert (run / "analysis.md").is_file()
    assert validate_report(run) == []


TIERS = {"compute": "compute", "kernel_fusion": "fusion", "system": "system"}


def test_every_item_has_one_card_with_its_numbers(run):
    """One P-number sequence across the report: item k is card Pk in its kind's section; the
    cards no item ranks come after, with no saving."""
    text = (run / "analysis.md").read_text(encoding="utf-8")
    items = json.loads((run / "priority_data.json").read_text())["priorities"]
    markers = _card_markers(text)
    for n, item in enumerate(items, 1):
        marker = markers.pop(n)
        assert item["p_number"] == n and marker["category"] == item["category"]
        if item["saving"] is None:  # unquantified (docs/analysis.md#unquantified-items)
            assert marker["mid"] == "null" and item["unquantified_reason"]
        else:
            assert float(marker["mid"]) == item["percent_mid"]
            assert float(marker["mid_ms"]) == pytest.approx(item["saving"]["mid_ms"], abs=1e-4)
        anchor = f"detailed-analysis-{TIERS[item['kind']]}-p{n}"
        assert f"(#{anchor})" in text and f'<a id="{anchor}"></a>' in text
    assert all(k > len(items) and m["mid"] == "null" for k, m in markers.items())


def test_report_has_no_template_leftovers(run):
    text = (run / "analysis.md").read_text(encoding="utf-8")
    assert "{{" not in text
    assert "<Model>" not in text and "<Platform>" not in text
    assert text.count("<!-- impact-begin kind=top_ops -->") == 1
