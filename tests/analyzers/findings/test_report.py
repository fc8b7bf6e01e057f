"""analysis.md composition from hand-made typed inputs, and the Level-3 report validator on
the run folder those inputs are written to."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.compose import compose_report
from rooflens.analyzers.findings.ranking.priorities import TraceLensCompute
from rooflens.analyzers.findings.validation.analysis_checks import (
    validate_report,
    validate_report_text,
)
from rooflens.analyzers.pipeline.folder import RunFolder
from tests.helpers.sample_metrics import REPORT_ARGS_CELL


def test_composed_report_passes_and_has_every_part(run):
    path = RunFolder(run.folder).write_analysis_report(run.compose())
    assert path == run.folder / layout.REPORT
    text = path.read_text(encoding="utf-8")
    assert validate_report(run.folder) == []
    heads = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert heads == [
        "## Executive Summary", "## Priorities",
        "## What this analysis could and could not see", "## Warnings",
        "## Compute Kernel Optimizations", "## Kernel Fusion Opportunities (Experimental)",
        "## System-Level Optimizations", "## Detailed Analysis", "## Appendix",
    ]  # fmt: skip
    # names (model, platform, categories, operations) are code spans
    assert text.startswith("# `Llama` - `MI300X` Standalone Analysis\n")
    assert "![Performance breakdown](perf_improvement.png)" in text
    assert "| Top Bottleneck Category | `GEMM` (57.1% of compute time) |" in text
    assert "| `reduce` | compute | `boom` |" in text
    assert "| `aten::mm` | `gemm` | 0.4 | 1.0 |" in text
    # Ops counts calls (the metrics' operation_count), Unique shapes the manifest's rows
    assert "| 1 | `GEMM` | 4.0 | 57.1% | 4 | 3 | <!-- top-ops-row low=4.0 high=6.0 -->" in text
    assert "| 2 | `Elementwise` | 2.0 | 28.6% | 9 | 2 |" in text
    assert "| FP8 matrix, max achievable (measured) | 1273 TFLOPS |" in text


def test_one_p_number_sequence_across_the_sections(run):
    """The idle item (1.5 ms at the mid) outranks the GEMM one (0.5 ms): P1 is a system card;
    the compute, fusion and system cards keep their sections but carry the global number."""
    text = run.compose()
    cards = [ln for ln in text.splitlines() if ln.startswith("### ") and ": " in ln]
    assert cards == [
        "### 🟡 P2: Slow gemm ops (hipBLASLt)",
        "### 🟢 P3: Slow elementwise ops (PyTorch Native)",
        "### 🟡 P4: Fuse the Norm kernels (1.5 ms, 10 instances)",  # fusion keeps its icon
        "### 🔴 P1: GPU waits on the host",
    ]
    assert "kind=p_item p=1 category=cpu_idle low=7.5 mid=15.0 high=22.5 low_ms=0.75 " in text
    assert "**Impact**: 0.75–2.25 ms (mid 1.50 ms, 15.00 % of the window)" in text
    assert "kind=p_item p=3 category=elementwise low=1.5 mid=2.0 high=2.5 low_ms=0.15" in text
    assert "**Impact**: 0.150–0.250 ms (mid 0.200 ms, 2.00 % of the window)" in text
    fusion = "0.100–0.140 ms (mid 0.120 ms, 1.20 % of the window); perf-model coverage 4/4 kernels"
    assert f"**Impact**: {fusion}" in text
    for anchor in ("compute-p2", "compute-p3", "fusion-p4", "system-p1"):
        assert f'<a id="detailed-analysis-{anchor}"></a>' in text
        assert f"(#detailed-analysis-{anchor})" in text
    assert "- Capped by the GPU idle time, 3.00 ms" in text


def test_priorities_table_lists_every_item_and_the_total(run):
    text = run.compose()
    section = text.split("## Priorities\n", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| P")]
    assert rows[1:] == [
        "| P1 | system | cpu_idle item | 0.75–2.25 | 1.50 | 7.50–22.50 "
        "| the GPU idle time, 3.00 ms |",
        "| P2 | compute | gemm item | 0.400–0.600 | 0.500 | 4.00–6.00 "
        "| its kernels' time, 4.00 ms |",
        "| P3 | compute | elementwise item | 0.150–0.250 | 0.200 | 1.50–2.50 "
        "| its kernels' time, 2.00 ms |",
        "| P4 | kernel fusion | kernel_fusion item | 0.100–0.140 | 0.120 | 1.00–1.40 "
        "| its kernels' time, 1.50 ms |",
    ]
    # mid: 1.5 ms of idle + 0.5 + 0.2 + 0.12 ms of kernels = 2.32 ms of the 10 ms window
    total = "Together, at most 2.32 ms (23.20 % of the window) at the mid estimate (1.40–3.24 ms)"
    assert total in section


def test_no_findings_gives_clear_sections(run):
    empty = run.inputs.priorities.model_copy(
        update={"priorities": [], "failed_categories": [], "tracelens_compute": TraceLensCompute()}
    )
    RunFolder(run.folder).write_priorities(empty)
    compute_only = {k: v for k, v in run.inputs.findings.items() if k in ("gemm", "elementwise")}
    text = compose_report(replace(run.inputs, priorities=empty, findings=compute_only))
    assert "✅ No compute kernel optimization opportunities identified: no compute" in text
    assert "No kernel fusion opportunities detected." in text
    assert "✅ No system-level bottlenecks detected." in text
    assert validate_report_text(text, run.folder) == []


def _drop_exec_table(text: str) -> str:
    head, rest = text.split("## Compute Kernel Optimizations", 1)
    head = "\n".join(ln for ln in head.splitlines() if not ln.startswith("|"))
    return head + "\n## Compute Kernel Optimizations" + rest


def _drop_top_ops(text: str) -> str:
    text = text.replace("<!-- impact-begin kind=top_ops -->\n", "", 1)
    start = text.index("### Top Operations")
    end = text.index("<!-- impact-end -->\n", start)
    return text[:end] + text[end + len("<!-- impact-end -->\n") :]


BROKEN = {
    "V1": lambda t: t.replace("## Appendix\n", "## Annex\n"),
    "V2": _drop_exec_table,
    "V3": lambda t: t.replace("| Idle % |", "| Idle |"),
    "V4": lambda t: t.replace(
        "| Total Time | 10.00 ms (the analysed window) |", "| Total Time | X ms |"
    ),
    "V5": lambda t: t.replace("# `Llama` - `MI300X`", "# <Model> - <Platform>"),
    "V6": lambda t: t.replace(f"| {REPORT_ARGS_CELL} |", "| `(1,2) fp32` |", 1),
    "V7": lambda t: t.replace("; perf-model coverage 4/4 kernels", ""),
    "R1": lambda t: t.replace("### 🟢 P3: Slow elementwise", "### Slow elementwise"),
    "R2": lambda t: t.replace("p=3 category=elementwise", "p=3 category=gemm"),
    "R3": lambda t: t.replace("category=gemm low=4.0 mid=5.0", "category=gemm low=4.0 mid=5.1"),
    "R6": lambda t: re.sub(r"^\| P2 \| compute .*\n", "", t, flags=re.M),
    "R4": lambda t: re.sub(r"^\| 2 \| `Elementwise` .*\n", "", t, flags=re.M),
    "R5": lambda t: t.replace("<!-- reasoning-candidate tier=compute rank=2 -->\n", ""),
    "M1": lambda t: t.replace("<!-- impact-end -->\n\n→ *See [Detailed Analysis: Compute", "→ *Se"),
    "M3": lambda t: t.replace("kind=detail_estimate", "kind=estimate", 1),
    "M4": lambda t: t.replace("category=gemm low=4.0 ", "category=gemm "),
    "M5": lambda t: t.replace("category=gemm low=4.0 mid=5.0", "category=gemm low=null mid=5.0"),
    "M6": _drop_top_ops,
}


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_broken_report_is_caught(run, rule):
    text = run.compose()
    broken = BROKEN[rule](text)
    assert broken != text, "the mutation did not apply"
    problems = validate_report_text(broken, run.folder)
    assert rule in {p.rule for p in problems}, problems
    assert all(p.message and p.line >= 1 for p in problems)


@pytest.mark.parametrize(
    "placeholder", ["<Model>", "<platform>", "<Brief Title>", "<Library>", "{{PERF_PLOT}}"]
)
def test_placeholders_are_caught(run, placeholder):
    text = run.compose().replace("![Performance breakdown](perf_improvement.png)", placeholder)
    problems = [p for p in validate_report_text(text, run.folder) if p.rule == "V5"]
    assert problems and placeholder in problems[0].message


def test_kernel_markup_is_not_a_placeholder(run):
    text = run.compose().replace("Slow gemm ops", "Slow gemm<br>ops <T> x<i>")
    assert [p for p in validate_report_text(text, run.folder) if p.rule == "V5"] == []


def test_missing_or_short_report_is_v0(run):
    assert [p.rule for p in validate_report(run.folder)] == ["V0"]
    assert [p.rule for p in validate_report_text("# tiny", run.folder)] == ["V0"]


def test_comparative_scope_from_manifest(run):
    text = run.compose()
    run.write_manifest(run.inputs.manifest.model_copy(update={"comparison_scope": "comparative"}))
    assert "V7" in {p.rule for p in validate_report_text(text, run.folder)}
    fixed = text.replace("; perf-model coverage 4/4 kernels", "")
    assert "V7" not in {p.rule for p in validate_report_text(fixed, run.folder)}


def test_missing_finding_card_gets_a_fallback(run):
    without = {k: v for k, v in run.inputs.findings.items() if k != "elementwise"}
    text = compose_report(replace(run.inputs, findings=without))
    assert "### 🟢 P3: elementwise item" in text
    assert "**Insight**: elementwise item; it could save 0.150–0.250 ms" in text
    assert validate_report_text(text, run.folder) == []


def test_a_priority_data_that_does_not_read_is_one_r1_problem(run):
    """Parsed up front as PriorityData: a document of the wrong shape is named, not skipped."""
    text = run.compose()
    (run.folder / "priority_data.json").write_text('{"baseline_ms": 10.0, "priorities": {}}')
    problems = [p for p in validate_report_text(text, run.folder) if p.rule == "R1"]
    assert [(p.line, p.message.split(" (")[0]) for p in problems] == [
        (1, "priority_data.json does not match its model")
    ]
    assert "priorities: " in problems[0].message and "regenerate it" in problems[0].message
    (run.folder / "priority_data.json").unlink()
    assert [p for p in validate_report_text(text, run.folder) if p.rule.startswith("R")] == []
