"""analysis.md composed for real run folders passes validate_report and copies priority numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.findings.contract import BEGIN_RE, Marker
from rooflens.analyzers.findings.report import write_report
from rooflens.analyzers.findings.validate_report import validate_report
from rooflens.server.cli import main
from tests.golden.cases import trace_path

FOLDERS = (
    "mi300_Qwen_Qwen1.5-0.5B-Chat__1016005",
    "h100_gaunernst_bert-small-uncased__1016001",
    "mi300_resnet_act_checkpoint",
)


@pytest.fixture(scope="module", params=FOLDERS)
def run(request, shared, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / request.param
    main(["analyze", str(trace_path(shared, request.param)), "--out", str(out)])
    write_report(out)
    return out


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
