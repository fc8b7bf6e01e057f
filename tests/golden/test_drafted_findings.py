"""Drafted findings for real run folders validate and copy the metrics impact numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.any_metrics import metrics_from_document
from rooflens.analyzers.findings.contract.contract import Status, Tier, render_findings
from rooflens.analyzers.findings.contract.validate import validate_findings, validate_findings_file
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.cli.main import main
from tests.helpers.golden import trace_path

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

FOLDERS = (
    "mi300_Qwen_Qwen1.5-0.5B-Chat__1016005",
    "h100_gaunernst_bert-small-uncased__1016001",
    "mi300_resnet_act_checkpoint",
)
IMPACT_KEYS = ("impact_score_low", "impact_score", "impact_score_high")


@pytest.fixture(scope="module", params=FOLDERS)
def run(request, shared, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("drafts") / request.param
    main(["analyze", str(trace_path(shared, request.param)), "--out", str(out)])
    return out


def expected_items(key: str, tier: Tier, metrics: dict) -> list[tuple[float, float, float]]:
    if metrics.get("status") == "ERROR":
        return []
    if tier == Tier.COMPUTE:
        items = sorted(metrics.get("category_findings") or [], key=lambda f: f["rank"])
    elif tier == Tier.FUSION:
        items = sorted(metrics.get("impact_estimates") or [], key=lambda e: -e["impact_score"])
    else:
        return []
    return [tuple(float(i[k]) for k in IMPACT_KEYS) for i in items]


def test_every_category_drafts_valid_findings(run):
    manifest = json.loads((run / "category_data" / "category_manifest.json").read_text())
    keys = [c["name"] for c in manifest["categories"]]
    assert keys
    drafted_cards = 0
    for key in keys:
        metrics = json.loads((run / layout.metrics(key)).read_text(encoding="utf-8"))
        findings = draft_findings(key, metrics_from_document(key, metrics))
        text = render_findings(findings)
        assert validate_findings(text, findings.tier, metrics=metrics) == [], key
        marks = [dict(c.impact.attrs) for c in findings.cards]
        if findings.tier == Tier.SYSTEM:
            assert all(set(m.values()) == {"null"} for m in marks), key
        else:
            got = [tuple(float(m[a]) for a in ("low", "mid", "high")) for m in marks]
            assert got == expected_items(key, findings.tier, metrics), key
        if metrics.get("status") == "ERROR":
            assert findings.status == Status.ERROR, key
        drafted_cards += len(findings.cards)
        path = run / layout.findings(key)  # what `analyze` wrote is that draft
        assert path.read_text(encoding="utf-8") == text, key
        assert validate_findings_file(path, findings.tier) == [], key
    assert drafted_cards > 0
