"""The report's inputs built by hand for the report tests: a 10 ms window (7 ms of kernels,
3 ms idle), a GEMM and an elementwise finding, a kernel-fusion candidate and an idle GPU, their
findings files, and the run folder the validator reads."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.models import CategoryMetrics, Efficiency, Operation
from rooflens.analyzers.findings.composing.compose import ReportInputs, compose_report
from rooflens.analyzers.findings.composing.model_info import ModelIdentification
from rooflens.analyzers.findings.contract.contract import parse_findings
from rooflens.analyzers.findings.ranking.impact_scale import Candidate, Saving, rank_items, totals
from rooflens.analyzers.findings.ranking.priorities import PriorityData
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.prepare.manifest import CategoryTables, Manifest
from tests.helpers.pipeline_runs import category_metadata, entry, manifest
from tests.helpers.sample_metrics import REPORT_ARGS, REPORT_ARGS_CELL

ARGS = REPORT_ARGS
HEADER = (
    "| Operation | Args | Kernel Path | Kernel Name | Time (ms) | %E2E | Count | FLOPS/Byte "
    "| Efficiency | Bound |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)

ROW = (
    f"| `aten::mm` | {REPORT_ARGS_CELL} | `a.py(1): f` | `k1` | 1.0 | 10.0 | 4 | 12.0 "
    "| 20.00% of 700 TFLOPS "
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
    """The hand-made run (its folder written, its report not)."""
    util = {"total_time_ms": 10.0, "computation_time_percent": 70.0, "idle_time_percent": 30.0,
            "exposed_comm_time_percent": 0.0, "exposed_memcpy_time_percent": 0.0}  # fmt: skip
    cats = [
        entry("cpu_idle", "system", display_name="CPU/Idle"),
        entry("gemm", gpu_kernel_time_ms=4.0, display_name="GEMM", ops_count=3),
        entry("elementwise", gpu_kernel_time_ms=2.0, display_name="Elementwise", ops_count=2),
    ]
    the_manifest = manifest(util, cats, platform="MI300X")
    metrics: dict = {
        cat: CategoryMetrics(category=cat, status="OK", operations=_operations(var),
                             operation_count=calls)
        for cat, var, calls in (("gemm", True, 4), ("elementwise", False, 9))
    }  # fmt: skip
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
