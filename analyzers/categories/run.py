"""Run the analyses of a prepared run folder, writing each `category_data/<key>_metrics.json`.

`analyze` is the one entry point per category (system or compute). Kernel fusion runs before
any compute category, because the compute analyses flag ops whose kernels a high-confidence
fusion candidate covers; asking for a compute category first runs it when its metrics are
missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from rooflens.analyzers.categories import analyze_category, write_metrics
from rooflens.analyzers.categories.cpu_idle import analyze_cpu_idle
from rooflens.analyzers.categories.kernel_fusion import analyze_kernel_fusion
from rooflens.analyzers.categories.multi_kernel import analyze_multi_kernel
from rooflens.analyzers.categories.system_inputs import write_metrics as write_system_metrics

SYSTEM_ANALYSES: dict[str, Callable[[Path], BaseModel]] = {
    "cpu_idle": analyze_cpu_idle,
    "multi_kernel": analyze_multi_kernel,
    "kernel_fusion": analyze_kernel_fusion,
}
KERNEL_FUSION = "kernel_fusion"


@dataclass(frozen=True)
class AnalysisResult:
    key: str
    status: str
    findings: int


def _metrics_path(run_dir: Path, key: str) -> Path:
    return Path(run_dir) / "category_data" / f"{key}_metrics.json"


def analyze(run_dir: Path, key: str) -> AnalysisResult:
    """Run one category's analysis and write its metrics document."""
    run_dir = Path(run_dir)
    if key in SYSTEM_ANALYSES:
        document = SYSTEM_ANALYSES[key](run_dir)
        write_system_metrics(_metrics_path(run_dir, key), document)
        estimates = getattr(document, "impact_estimates", None) or []
        return AnalysisResult(key, str(getattr(document, "status", "OK")), len(estimates))
    fusion_data = run_dir / "category_data" / "fusion_candidates.json"
    if fusion_data.is_file() and not _metrics_path(run_dir, KERNEL_FUSION).is_file():
        analyze(run_dir, KERNEL_FUSION)
    metrics = analyze_category(run_dir, key)
    write_metrics(run_dir, metrics)
    return AnalysisResult(key, metrics.status, len(metrics.category_findings or []))


def analysis_order(run_dir: Path) -> list[str]:
    """The keys of the run's manifest to analyse: system analyses first, then compute ones."""
    manifest = json.loads((Path(run_dir) / "category_data" / "category_manifest.json").read_text())
    entries = manifest["categories"]
    system = [e["name"] for e in entries if e["name"] in SYSTEM_ANALYSES]
    compute = [e["name"] for e in entries if e.get("tier") == "compute_kernel"]
    return [*system, *compute]


def analyze_run(run_dir: Path) -> list[AnalysisResult]:
    """Every category of the run's manifest, in `analysis_order`."""
    return [analyze(run_dir, key) for key in analysis_order(run_dir)]
