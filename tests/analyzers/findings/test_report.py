"""analysis.md composition from hand-made typed inputs, and the Level-3 report validator on
the run folder those inputs are written to."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.models import CategoryMetrics, Efficiency, Operation
from rooflens.analyzers.findings.contract import parse_findings
from rooflens.analyzers.findings.impact_scale import Candidate, Saving, rank_items, totals
from rooflens.analyzers.findings.model_info import ModelIdentification
from rooflens.analyzers.findings.priorities import PriorityData
from rooflens.analyzers.findings.report import ReportInputs, compose_report
from rooflens.analyzers.findings.validate_report import validate_report, validate_report_text
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.manifest import CategoryTables, Manifest
from tests.helpers.pipeline_runs import category_metadata, entry, manifest

ARGS = "(64,128) bf16<br>(128,256) bf16"
HEADER = (
    "| Operation | Args | Kernel Path | Kernel Name | Time (ms) | %E2E | Count | FLOPS/Byte "
    "| Efficiency | Bound |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)

ROW = (
    f"| aten::mm | {ARGS} | a.py(1): f | k1 | 1.0 | 10.0 | 4 | 12.0 | 20.00% of 700 TFLOPS "
    "| compute-bound |"
)


def _compute_file(cat: str, low: float, mid: float, high: float, lib: str) -> str:
    return f"""# {cat} findings

**Status**: SUCCESS

One finding.

## Recommendations

### P1: Slow {cat} ops ({lib})
**Insight**: The {cat} ops run far below the roofline.
**Action**: Pick a better tuned kernel.
<!-- impact-begin kind=p_item low={low} mid={mid} high={high} -->
**Impact**: impact_score: {mid}
<!-- impact-end -->

## Detailed Analysis

<!-- reasoning-candidate tier=compute rank=1 -->
#### Slow {cat} ops
**Identification:** One op (source: `{cat}_metrics.json` → `category_findings`).

**Data:**
{HEADER}
{ROW}

**Reasoning for Slowdown:** It is far from the roofline.

**Resolution:** Pick a better tuned kernel.

**Impact estimate:**
<!-- impact-begin kind=detail_estimate low={low} high={high} -->
- Low end impact_score: {low}
- High end impact_score: {high}
<!-- impact-end -->
"""


FUSION = """# kernel_fusion findings

**Status**: SUCCESS

## Recommendations

### 🟡 P1: Fuse the Norm kernels (1.5 ms, 10 instances)
**Insight**: Norm launches 4 kernels per instance.
**Action**: Fuse the chain into one kernel.
**Confidence**: Medium -- module name only
<!-- impact-begin kind=p_item low=1.0 mid=1.2 high=1.4 -->
**Impact**: impact_score: 1.2 (perf-model coverage 4/4 kernels)
<!-- impact-end -->

## Detailed Analysis

<!-- reasoning-candidate tier=fusion rank=1 -->
#### Norm kernel fusion
**Identification:** Norm runs as 4 kernels (source: `kernel_fusion_metrics.json`).

**Data:**
| Metric | Value |
| --- | --- |
| Time (ms) | 1.5 |

**Impact estimate:**
<!-- impact-begin kind=detail_estimate low=1.0 high=1.4 -->
- Low end impact_score: 1.0
- High end impact_score: 1.4
<!-- impact-end -->
"""

CPU_IDLE = """# cpu_idle findings

**Status**: SUCCESS

## Recommendations

### P1: GPU waits on the host
**Insight**: The GPU is idle 30% of the time.
**Action**: Overlap host work with GPU work.
<!-- impact-begin kind=p_item low=null mid=null high=null -->
**Impact**: Not quantifiable from trace data
<!-- impact-end -->

## Detailed Analysis

<!-- reasoning-candidate tier=system rank=1 -->
#### GPU waits on the host
**Identification:** Idle is high (source: `cpu_idle_metrics.json` → `gpu_utilization`).

**Data:**
| Metric | Value | Flagged |
| --- | --- | --- |
| Idle time | 3.0 ms (30.0%) | true |

**Impact estimate:** Impact estimate is not quantifiable from trace data.
"""


def _finding(cat: str, low: float, mid: float, high: float, rank: int) -> dict:
    return {
        "bound_type": "compute", "library": "hipBLASLt", "eff_bucket": "0-30",
        "estimate_method": "quantified", "impact_score": mid, "impact_score_low": low,
        "impact_score_high": high, "member_count": 1, "members": [],
        "category": cat, "category_rank": 1, "global_rank": rank,
    }  # fmt: skip


def _candidate(cat: str, kind: str, ms: tuple[float, float, float], cap: float, pool: str):
    low, mid, high = ms
    saving = Saving(low_ms=low, mid_ms=mid, high_ms=high, cap_ms=cap, pool=pool, basis="b")
    rank = None if kind == "system" else 1
    return Candidate(category=cat, kind=kind, title=f"{cat} item", estimate_method="quantified",
                     saving=saving, source_rank=rank)  # fmt: skip


# A 10 ms window: 7 ms of kernels, 3 ms idle. The idle item (50 % of 3 ms at the mid) is worth
# more than any compute one, so it is P1, in the System-Level section.
CANDIDATES = (
    _candidate("gemm", "compute", (0.4, 0.5, 0.6), 4.0, "kernels"),
    _candidate("elementwise", "compute", (0.15, 0.2, 0.25), 2.0, "kernels"),
    _candidate("kernel_fusion", "kernel_fusion", (0.1, 0.12, 0.14), 1.5, "kernels"),
    _candidate("cpu_idle", "system", (0.75, 1.5, 2.25), 3.0, "idle"),
)


@dataclass(frozen=True)
class Run:
    """A run's report inputs in memory, and the folder they are written to (the validator
    reads the folder)."""

    folder: Path
    inputs: ReportInputs

    def compose(self) -> str:
        return compose_report(self.inputs)

    def write_manifest(self, the_manifest: Manifest) -> None:
        tables = CategoryTables(the_manifest, {}, dict(self.inputs.metadata), {})
        RunFolder(self.folder).write_category_tables(tables)


def _operations(high_variance: bool) -> tuple[Operation, ...]:
    op = {"name": "aten::mm", "count": 4, "time_ms": 1.0, "percent_of_category": 100.0,
          "percent_of_total": 10.0, "efficiency": Efficiency(), "args": ARGS, "cov": 0.4,
          "high_variance": high_variance}  # fmt: skip
    return (Operation.model_validate(op),)


@pytest.fixture
def run(tmp_path: Path) -> Run:
    util = {"total_time_ms": 10.0, "computation_time_percent": 70.0, "idle_time_percent": 30.0,
            "exposed_comm_time_percent": 0.0, "exposed_memcpy_time_percent": 0.0}  # fmt: skip
    cats = [
        entry("cpu_idle", "system", display_name="CPU/Idle"),
        entry("gemm", gpu_kernel_time_ms=4.0, display_name="GEMM", ops_count=3),
        entry("elementwise", gpu_kernel_time_ms=2.0, display_name="Elementwise", ops_count=2),
    ]
    the_manifest = manifest(util, cats, platform="MI300X")
    metrics: dict = {
        cat: CategoryMetrics(category=cat, status="OK", operations=_operations(var))
        for cat, var in (("gemm", True), ("elementwise", False))
    }
    metrics["cpu_idle"] = CpuIdleMetrics(status="OK", idle_flagged=True)
    items = rank_items(CANDIDATES, 10.0)
    priority = PriorityData.model_validate({
        "baseline_ms": 10.0,
        "findings": [_finding("gemm", 4.0, 5.0, 6.0, 1), _finding("elementwise", 1.5, 2.0, 2.5, 2)],
        "priorities": [
            {"rank": 1, "category": "gemm", "display_name": "GEMM", "impact_score": 5.0,
             "impact_score_low": 4.0, "impact_score_high": 6.0, "source": "findings_rollup"},
            {"rank": 2, "category": "elementwise", "display_name": "Elementwise",
             "impact_score": 2.0, "impact_score_low": 1.5, "impact_score_high": 2.5,
             "source": "findings_rollup"},
        ],
        "recommendations": [], "all_estimates": [],
        "failed_categories": [{"category": "reduce", "status": "ERROR", "message": "boom"}],
        "items": items, "saving_totals": totals(items, the_manifest.gpu_utilization),
    })  # fmt: skip
    findings = {
        "gemm": parse_findings(_compute_file("gemm", 4.0, 5.0, 6.0, "hipBLASLt"), "compute"),
        "elementwise": parse_findings(
            _compute_file("elementwise", 1.5, 2.0, 2.5, "PyTorch Native"), "compute"
        ),
        "kernel_fusion": parse_findings(FUSION, "fusion"),
        "cpu_idle": parse_findings(CPU_IDLE, "system"),
    }
    meta = category_metadata(
        "gemm", peak_hbm_bw_tbs=5.3, max_achievable_tflops={"matrix_bf16": 708.0,
                                                            "matrix_fp8": 1273.0}
    )  # fmt: skip
    identity = ModelIdentification(
        model="Llama", architecture="decoder", scale="~1B", precision="bf16"
    )
    inputs = ReportInputs(
        manifest=the_manifest,
        metadata={"gemm": meta},
        metrics=metrics,
        findings=findings,
        priorities=priority,
        identity=identity,
        has_plot=True,
        platform=get_platform("MI300X"),
    )
    folder = RunFolder(tmp_path)
    built = Run(tmp_path, inputs)
    built.write_manifest(the_manifest)
    for key, analysed in metrics.items():
        folder.write_metrics(key, analysed)
    for key, found in findings.items():
        folder.write_findings(key, found)
    folder.write_priorities(priority)
    return built


def test_composed_report_passes_and_has_every_part(run):
    path = RunFolder(run.folder).write_analysis_report(run.compose())
    assert path == run.folder / layout.REPORT
    text = path.read_text(encoding="utf-8")
    assert validate_report(run.folder) == []
    heads = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert heads == [
        "## Executive Summary", "## Priorities", "## Warnings",
        "## Compute Kernel Optimizations", "## Kernel Fusion Opportunities (Experimental)",
        "## System-Level Optimizations", "## Detailed Analysis", "## Appendix",
    ]  # fmt: skip
    assert text.startswith("# Llama - MI300X Standalone Analysis\n")
    assert "![Performance breakdown](perf_improvement.png)" in text
    assert "| Top Bottleneck Category | GEMM (57.1%) |" in text
    assert "| reduce | compute | boom |" in text
    assert "| aten::mm | gemm | 0.4 | 1.0 |" in text
    assert "| 1 | GEMM | 4.0 | 57.1% | 3 | <!-- top-ops-row low=4.0 high=6.0 -->" in text
    assert "| Peak MAF (FP8) | 1273.0 TFLOPS |" in text


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
        update={"findings": [], "priorities": [], "failed_categories": [], "items": []}
    )
    RunFolder(run.folder).write_priorities(empty)
    compute_only = {k: v for k, v in run.inputs.findings.items() if k in ("gemm", "elementwise")}
    text = compose_report(replace(run.inputs, priorities=empty, findings=compute_only))
    assert "✅ No compute kernel optimization opportunities identified." in text
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
    "V4": lambda t: t.replace("| Total Time | 10.00 ms |", "| Total Time | X ms |"),
    "V5": lambda t: t.replace("# Llama - MI300X", "# <Model> - <Platform>"),
    "V6": lambda t: t.replace(f"| {ARGS} |", "| (1,2) fp32 |", 1),
    "V7": lambda t: t.replace("; perf-model coverage 4/4 kernels", ""),
    "R1": lambda t: t.replace("### 🟢 P3: Slow elementwise", "### Slow elementwise"),
    "R2": lambda t: t.replace("p=3 category=elementwise", "p=3 category=gemm"),
    "R3": lambda t: t.replace("category=gemm low=4.0 mid=5.0", "category=gemm low=4.0 mid=5.1"),
    "R6": lambda t: re.sub(r"^\| P2 \| compute .*\n", "", t, flags=re.M),
    "R4": lambda t: re.sub(r"^\| 2 \| Elementwise .*\n", "", t, flags=re.M),
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
