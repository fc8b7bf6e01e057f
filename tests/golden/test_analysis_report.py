"""analysis.md composed for real run folders passes validate_report and copies priority numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.findings.contract import BEGIN_RE, Marker
from rooflens.analyzers.findings.drafts import tier_for
from rooflens.analyzers.findings.validate import validate_findings_file
from rooflens.analyzers.findings.validate_report import validate_report
from rooflens.server.cli import main
from tests.helpers.golden import REFERENCE_FOLDERS, trace_path

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


def _compute_markers(text: str) -> list[dict[str, str]]:
    section = text.split("## Compute Kernel Optimizations", 1)[1].split("\n## ", 1)[0]
    found = [Marker.parse(ln) for ln in section.splitlines() if BEGIN_RE.match(ln)]
    return [{"kind": m.kind, **dict(m.attrs)} for m in found if m and m.kind == "p_item"]


def test_report_validates(run):
    assert (run / "analysis.md").is_file()
    assert validate_report(run) == []


def test_p_item_markers_equal_priority_findings(run):
    text = (run / "analysis.md").read_text(encoding="utf-8")
    findings = json.loads((run / "priority_data.json").read_text())["findings"]
    markers = _compute_markers(text)
    assert len(markers) == len(findings)
    for n, (marker, finding) in enumerate(zip(markers, findings, strict=True), 1):
        assert marker["category"] == finding["category"]
        assert float(marker["low"]) == finding["impact_score_low"]
        assert float(marker["mid"]) == finding["impact_score"]
        assert float(marker["high"]) == finding["impact_score_high"]
        assert f"(#detailed-analysis-compute-p{n})" in text
        assert f'<a id="detailed-analysis-compute-p{n}"></a>' in text


def test_report_has_no_template_leftovers(run):
    text = (run / "analysis.md").read_text(encoding="utf-8")
    assert "{{" not in text
    assert "<Model>" not in text and "<Platform>" not in text
    assert text.count("<!-- impact-begin kind=top_ops -->") == 1
