"""`rooflens analyze` end to end on generated traces (the counterparts of golden
test_truth_every_trace, test_analysis_report, test_drafted_findings, test_determinism and
validate_run's real run).

Planted in every sample trace: GEMMs of 13 distinct shapes (four forward linears, the LM
head, eight backward mm shapes), 6 elementwise ops (add, GELU, the LM-head mul, GELU
backward, the optimizer's mul, the token copy), one layer norm and one attention op.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.any_metrics import metrics_from_document
from rooflens.analyzers.findings.contract.contract import (
    BEGIN_RE,
    Marker,
    Status,
    Tier,
    render_findings,
)
from rooflens.analyzers.findings.contract.validate import validate_findings, validate_findings_file
from rooflens.analyzers.findings.drafting.drafts import draft_findings, tier_for
from rooflens.analyzers.findings.validation.analysis_checks import validate_report
from rooflens.analyzers.findings.validation.run_checks import validate_run
from rooflens.cli.main import main
from tests.helpers.sample_traces import P100, renamed_gpu, write_variant

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

RUNS = {
    "sample": {},
    "one_layer_seed_1": {"layers": 1, "seed": 1},
    "eight_mlp_modules": {"layers": 8, "mlp_module": True},
}
# the token copy (a host-to-device copy) is no computation: it leaves elementwise
# (docs/analysis.md#category-time), so 5 of the 6 elementwise ops stay
COMPUTE_OPS = {"gemm": 13, "elementwise": 5, "norm_fwd": 1, "sdpa_fwd": 1}
SYSTEM = {"cpu_idle", "multi_kernel", "kernel_fusion"}
IMPACT_KEYS = ("impact_score_low", "impact_score", "impact_score_high")


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("analyze")
    trace = write_variant(folder / f"{request.param}.json.gz", **RUNS[request.param])
    out = folder / "run"
    assert main(["analyze", str(trace), "--out", str(out)]) == 0
    return out


def manifest_of(run: Path) -> dict:
    return json.loads((run / "category_data/category_manifest.json").read_text())


def test_every_planted_category_is_analysed(run: Path) -> None:
    categories = manifest_of(run)["categories"]
    assert {c["name"] for c in categories} == SYSTEM | set(COMPUTE_OPS)
    compute = {c["name"]: c["ops_count"] for c in categories if c["tier"] == "compute_kernel"}
    assert compute == COMPUTE_OPS
    for entry in categories:
        metrics = json.loads((run / layout.metrics(entry["name"])).read_text())
        assert metrics.get("status", "OK") in {"OK", "SUCCESS"}, (entry["name"], metrics)


def test_every_findings_file_validates(run: Path) -> None:
    files = sorted(run.glob("*_findings/*_findings.md"))
    assert {p.name.removesuffix("_findings.md") for p in files} == SYSTEM | set(COMPUTE_OPS)
    for path in files:
        key = path.name.removesuffix("_findings.md")
        assert validate_findings_file(path, tier_for(key)) == [], path.name


def _card_markers(text: str) -> dict[int, dict[str, str]]:
    """The p_item markers of the three card sections, by their P-number."""
    cards = text.split("## Compute Kernel Optimizations", 1)[1].split("## Detailed Analysis")[0]
    found = [Marker.parse(ln) for ln in cards.splitlines() if BEGIN_RE.match(ln)]
    return {int(m.attr("p") or 0): dict(m.attrs) for m in found if m and m.kind == "p_item"}


TIERS = {"compute": "compute", "kernel_fusion": "fusion", "system": "system"}


def test_the_report_validates_and_copies_the_priority_numbers(run: Path) -> None:
    """Item k of priority_data.json is card Pk, in its kind's section, with its numbers."""
    assert validate_report(run) == []
    text = (run / "analysis.md").read_text(encoding="utf-8")
    items = json.loads((run / "priority_data.json").read_text())["priorities"]
    markers = _card_markers(text)
    assert items and {i["kind"] for i in items} >= {"compute", "system"}
    for n, item in enumerate(items, 1):
        marker = markers.pop(n)
        assert item["p_number"] == n and marker["category"] == item["category"]
        assert (float(marker["low"]), float(marker["mid"]), float(marker["high"])) == (
            item["percent_low"],
            item["percent_mid"],
            item["percent_high"],
        )
        assert float(marker["mid_ms"]) == pytest.approx(item["saving"]["mid_ms"], abs=1e-4)
        anchor = f"detailed-analysis-{TIERS[item['kind']]}-p{n}"
        assert f"(#{anchor})" in text and f'<a id="{anchor}"></a>' in text
    assert all(k > len(items) and m["mid"] == "null" for k, m in markers.items())
    assert "{{" not in text and "<Model>" not in text and "<Platform>" not in text
    assert text.count("<!-- impact-begin kind=top_ops -->") == 1


def _expected_items(tier: Tier, metrics: dict) -> list[tuple[float, ...]]:
    if tier == Tier.COMPUTE:
        items = sorted(metrics.get("category_findings") or [], key=lambda f: f["rank"])
    elif tier == Tier.FUSION:
        items = sorted(metrics.get("impact_estimates") or [], key=lambda e: -e["impact_score"])
    else:
        return []
    return [tuple(float(i[k]) for k in IMPACT_KEYS) for i in items]


def test_the_drafts_copy_the_metrics_impact_numbers(run: Path) -> None:
    cards = 0
    for entry in manifest_of(run)["categories"]:
        key = entry["name"]
        metrics = json.loads((run / layout.metrics(key)).read_text(encoding="utf-8"))
        findings = draft_findings(key, metrics_from_document(key, metrics))
        text = render_findings(findings)
        assert findings.status != Status.ERROR, key
        assert validate_findings(text, findings.tier, metrics=metrics) == [], key
        marks = [dict(c.impact.attrs) for c in findings.cards]
        if findings.tier == Tier.SYSTEM:
            assert all(set(m.values()) == {"null"} for m in marks), key
        else:
            got = [tuple(float(m[a]) for a in ("low", "mid", "high")) for m in marks]
            assert got == _expected_items(findings.tier, metrics), key
        assert (run / layout.findings(key)).read_text(encoding="utf-8") == text, key
        cards += len(findings.cards)
    assert cards > 0


def test_the_run_passes_validate_run(run: Path) -> None:
    result = validate_run(run)
    for check in ("time_check", "coverage_check", "priority_check"):
        assert getattr(result, check).status == "PASS", (check, getattr(result, check).messages)
    assert (run / "system_findings/cpu_idle_findings.md").is_file()


def test_a_gpu_outside_the_catalogue_is_analysed_without_then_with_a_named_platform(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = write_variant(tmp_path / "p100.json.gz", renamed_gpu("Tesla P100-SXM2-16GB", **P100))
    args = ["analyze", str(trace), "--out"]
    assert main([*args, str(tmp_path / "bare")]) == 0  # no roofline (tests/truth has more)
    assert "Warning: The GPU (Tesla P100-SXM2-16GB)" in capsys.readouterr().out
    assert manifest_of(tmp_path / "bare")["platform"] is None
    assert main([*args, str(tmp_path / "a100"), "--platform", "A100"]) == 0
    assert manifest_of(tmp_path / "a100")["platform"] == "A100"
    assert "Warning:" not in capsys.readouterr().out


# --- determinism -------------------------------------------------------------------------------
# Declared exceptions (ARCHITECTURE: deterministic): the workbook's docProps/core.xml (its
# creation and modification times) and, in run.json, the run id, its start time and the
# workbook's hash.


def _files(folder: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(folder)): p
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != "run.json"
    }


def _record(folder: Path) -> dict:
    record = json.loads((folder / "run.json").read_text())
    for name in ("run_id", "created"):
        record.pop(name)
    record["artifacts"].pop("perf_report.xlsx")
    return record


def _xlsx_parts(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {n: archive.read(n) for n in archive.namelist() if n != "docProps/core.xml"}


def test_two_analyze_runs_write_identical_artifacts(tmp_path: Path) -> None:
    trace = write_variant(tmp_path / "sample.json.gz")
    run = tmp_path / "run"  # the same path both times: the manifest records the run folder
    assert main(["analyze", str(trace), "--out", str(run)]) == 0
    first = tmp_path / "first"
    shutil.move(run, first)
    assert main(["analyze", str(trace), "--out", str(run)]) == 0
    ours, theirs = _files(first), _files(run)
    assert sorted(ours) == sorted(theirs)
    assert len(ours) > 30  # report CSVs, workbook, category data, metrics, findings, report
    assert _record(first) == _record(run)
    for name, path in ours.items():
        if name.endswith(".xlsx"):
            assert _xlsx_parts(path) == _xlsx_parts(theirs[name]), name
        else:
            assert path.read_bytes() == theirs[name].read_bytes(), name
