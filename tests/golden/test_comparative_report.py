"""analysis.md in comparative form, composed from TraceLens's comparative reference documents.

Each `tracelens_compare` pair folder holds a complete comparative manifest (with trace 2's
utilisation and category times) and comparative `<cat>_metrics.json`; composed into a report
they must validate, and the trace 1 / trace 2 / difference figures must be the reference's.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from rooflens.analyzers.categories.any_metrics import metrics_from_document
from rooflens.analyzers.findings.composing.comparative import ReportComparison
from rooflens.analyzers.findings.composing.compose import compose_report
from rooflens.analyzers.findings.composing.summary import ReportInputs
from rooflens.analyzers.findings.contract.validate import validate_findings_file
from rooflens.analyzers.findings.drafting.drafts import draft_findings, tier_for
from rooflens.analyzers.findings.ranking.priorities import priority_data
from rooflens.analyzers.findings.validation.analysis_checks import validate_report
from rooflens.analyzers.markdown_text import md_cell
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.manifest import Manifest
from tests.helpers.golden import COMPARATIVE_UNIT_CASES

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

MODELS = [
    "Falconsai_nsfw_image_detection__1016002",
    "Qwen_Qwen1.5-0.5B-Chat__1016005",
    "facebook_timesformer-base-finetuned-k400__1016002",
    "gaunernst_bert-small-uncased__1016001",
    "google_owlv2-large-patch14-ensemble__1016001",
]
FOLDERS = [f"unit_{c}" for c in COMPARATIVE_UNIT_CASES] + [f"mi300_vs_h100_{m}" for m in MODELS]


def compose(source: Path, out: Path) -> tuple[str, Manifest]:
    """The report of a reference folder's documents, written with its inputs into `out`."""
    data = source / "category_data"
    document = json.loads((data / "category_manifest.json").read_text(encoding="utf-8"))
    manifest = Manifest.model_validate({"top_operations": [], **document})
    metrics = {
        key: metrics_from_document(key, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(data.glob("*_metrics.json"))
        if (key := path.name.removesuffix("_metrics.json"))
    }
    (out / "category_data").mkdir(parents=True)
    for path in data.glob("*.json"):
        shutil.copy(path, out / "category_data" / path.name)
    folder = RunFolder(out)
    priorities = priority_data(manifest, metrics)
    folder.write_priorities(priorities)
    candidates = json.loads((data / "fusion_candidates.json").read_text(encoding="utf-8"))
    findings = {key: draft_findings(key, m, candidates) for key, m in metrics.items()}
    for key, drafted in findings.items():
        folder.write_findings(key, drafted)
    text = compose_report(
        ReportInputs(
            manifest=manifest, metadata={}, metrics=metrics, findings=findings,
            priorities=priorities, identity=None, has_plot=False,
            comparison=ReportComparison.of(manifest, None, platform2="H100"),
        )
    )  # fmt: skip
    folder.write_analysis_report(text)
    return text, manifest


@pytest.fixture(scope="module", params=FOLDERS)
def composed(request, shared: Path, tmp_path_factory) -> tuple[str, Path, str, Manifest]:
    source = shared / "reference" / "tracelens_compare" / request.param
    out = tmp_path_factory.mktemp("compare") / request.param
    text, manifest = compose(source, out)
    return request.param, out, text, manifest


def test_report_and_findings_validate(composed) -> None:
    _, out, text, _ = composed
    # platform and category names are code spans (docs/analysis.md#trace-text-in-markdown)
    assert text.startswith("# Unidentified model - Comparative Analysis: `MI300X` vs `H100`\n")
    assert "| Trace 2's platform (its perf report's roofline) | `H100` |" in text
    assert validate_report(out) == []
    for path in sorted(out.glob("*_findings/*_findings.md")):
        key = path.name.removesuffix("_findings.md")
        assert validate_findings_file(path, tier_for(key), "comparative") == [], path.name


def _row(text: str, label: str) -> list[str]:
    line = next(ln for ln in text.splitlines() if ln.startswith(f"| {label} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_executive_summary_has_both_traces_and_their_difference(composed) -> None:
    """Trace 1 / trace 2 figures are the reference manifest's; the difference is T1 − T2."""
    _, _, text, manifest = composed
    u1, u2 = manifest.gpu_utilization, manifest.trace2_gpu_utilization
    assert "| Metric | Trace 1 (`MI300X`) | Trace 2 (`H100`) | Difference (T1 − T2) |" in text
    _, t1, t2, diff = _row(text, "Total Time")
    assert (t1, t2) == (f"{u1.total_time_ms:.2f} ms", f"{u2.total_time_ms:.2f} ms")
    delta = u1.total_time_ms - u2.total_time_ms
    assert diff == f"{delta:+.2f} ms ({delta / u2.total_time_ms * 100:+.1f} % of trace 2)"
    _, i1, i2, idiff = _row(text, "Idle %")
    assert idiff == f"{u1.idle_time_percent - u2.idle_time_percent:+.2f} pp"
    assert (i1, i2) == (f"{u1.idle_time_percent:.2f}%", f"{u2.idle_time_percent:.2f}%")


def test_top_operations_give_trace_2_time_per_category(composed) -> None:
    _, _, text, manifest = composed
    times2 = {
        r["op category"].lower(): r["total_direct_kernel_time_ms"]
        for r in manifest.trace2_ops_summary_by_category or []
    }
    block = text.split("<!-- impact-begin kind=top_ops -->", 1)[1].split("<!-- impact-end -->")[0]
    assert (
        "| Rank (by estimated saving) | Category | Trace 1 Time (ms) | Trace 2 Time (ms) |" in block
    )
    by_display = {md_cell(c.display_name): c for c in manifest.categories}
    rows = [ln for ln in block.splitlines() if re.match(r"\| \d+ \|", ln)]
    assert rows
    for line in rows:
        cells = [c.strip() for c in line.split("<!--")[0].strip().strip("|").split("|")]
        entry = by_display[cells[1]]
        assert float(cells[2]) == entry.gpu_kernel_time_ms
        t2 = times2.get(entry.name.lower())
        if t2 is None:
            assert cells[3] == cells[4] == "—"
            continue
        assert float(cells[3]) == round(t2, 3)
        assert float(cells[4]) == round(entry.gpu_kernel_time_ms - t2, 3)


def test_unit_gemm_card_states_the_difference(shared: Path, tmp_path: Path) -> None:
    """unit_test04: aten::mm takes 0.73 ms against 0.48 ms (efficiency 65.75 %), so trace 1 is
    100 / 65.75 − 1 = 52.1 % slower; the report's T1/T2/difference row is 0.74 / 0.48."""
    source = shared / "reference" / "tracelens_compare" / "unit_test04_gemm_mm_vs_linear"
    text, _ = compose(source, tmp_path / "out")
    assert "| Total Time | 0.74 ms | 0.48 ms | +0.26 ms (+54.2 % of trace 2) |" in text
    assert "`gemm` ops 52.1 % slower than trace 2" in text
    assert "1 operation (0.73 ms in trace 1 against 0.48 ms in trace 2) is 52.1 % slower" in text
    assert "Trace 2 does the same work in 65.75 % of trace 1's time" in text
    assert "| 1 | `GEMM` | 0.73 | 0.48 | 0.25 |" in text
    top = "`GEMM` (100.0% of compute time)"  # gemm is all of each trace's category time
    assert f"| Top Bottleneck Category | {top} | {top} | same category |" in text
    assert "- **Against trace 2**: Trace 1's window (0.74 ms) is 54.2 % longer" in text


def test_unit_moe_fusion_block_shows_both_traces_kernels(shared: Path, tmp_path: Path) -> None:
    """unit_test01: the fused MoE of trace 2 (one Triton kernel, 800 µs) against trace 1's four
    kernels (120 + 480 + 480 + 80 µs), as the contract's two comparative kernel tables."""
    source = shared / "reference" / "tracelens_compare" / "unit_test01_moe_fused_vs_unfused"
    compose(source, tmp_path / "out")
    text = (tmp_path / "out" / "system_findings" / "kernel_fusion_findings.md").read_text()
    assert "`moe_layer` runs as 4 kernels in trace 1 against 1 in trace 2 (1.160 ms against " \
        "0.800 ms over 1 instances)." in text  # fmt: skip
    one, two = text.split("**Trace 1 kernels**")[1].split("**Trace 2 kernels**")
    assert "| Kernel | Type | Duration (us) |" in one and "| Kernel | Type | Duration (us) |" in two
    assert [float(r.split("|")[3]) for r in one.splitlines() if r.startswith("| `moe_")
            or r.startswith("| `ck_")] == [120.0, 480.0, 480.0, 80.0]  # fmt: skip
    assert "| `triton__moe_fused_kernel_0d1d2d3d4d5d6d7d8d9d10d` | Unknown | 800.0 |" in two
    assert "perf-model coverage" not in text
    assert "**Action**: Run this operator the way trace 2 does, with the fused kernel" in text


def test_qwen_attention_gap_is_counted_once(shared: Path, tmp_path: Path) -> None:
    """Qwen: the measured fusion of aten::_flash_attention_forward (its two kernels, 4.016 ms
    against 2.723 ms in trace 2) and the SDPA finding on the operator that runs them claim the
    same gap; the totals count it once, under the higher-ranked item."""
    pair = f"mi300_vs_h100_{MODELS[1]}"  # Qwen
    source = shared / "reference" / "tracelens_compare" / pair
    text, _ = compose(source, tmp_path / "out")
    data = json.loads((tmp_path / "out" / "priority_data.json").read_text())
    items = {i["p_number"]: i for i in data["priorities"]}
    fusion = next(p for p, i in items.items() if i["kind"] == "kernel_fusion")
    sdpa = next(p for p, i in items.items() if i["category"] == "sdpa_fwd")
    first, second = sorted((fusion, sdpa))
    totals = data["saving_totals"]
    assert totals["counted_in"] == {str(second): first}
    counted = [i["saving"]["mid_ms"] for p, i in items.items() if i["saving"] and p != second]
    assert totals["mid_ms"] == pytest.approx(sum(counted), abs=1e-3)
    assert f"its kernels are P{first}'s, counted there |" in text
