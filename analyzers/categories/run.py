"""Run every analysis a prepared run folder's manifest lists, in order, writing each
`category_data/<key>_metrics.json`. System analyses first (cpu_idle, multi_kernel), then the
compute categories. Kernel-fusion candidates are not built yet, so no op is fusion-flagged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from rooflens.analyzers.categories import analyze_category, write_metrics
from rooflens.analyzers.categories.cpu_idle import analyze_cpu_idle
from rooflens.analyzers.categories.multi_kernel import analyze_multi_kernel
from rooflens.analyzers.categories.system_inputs import write_metrics as write_system_metrics

SYSTEM_ANALYSES = {"cpu_idle": analyze_cpu_idle, "multi_kernel": analyze_multi_kernel}


@dataclass(frozen=True)
class AnalysisResult:
    key: str
    status: str
    findings: int


def analyze_run(run_dir: Path) -> list[AnalysisResult]:
    """Analyse every category of the run's manifest; returns one result line per category."""
    run_dir = Path(run_dir)
    manifest = json.loads((run_dir / "category_data" / "category_manifest.json").read_text())
    results: list[AnalysisResult] = []
    for entry in manifest["categories"]:
        key = entry["name"]
        if key in SYSTEM_ANALYSES:
            document = SYSTEM_ANALYSES[key](run_dir)
            write_system_metrics(run_dir / "category_data" / f"{key}_metrics.json", document)
            status = str(getattr(document, "status", "OK"))
            results.append(AnalysisResult(key, status, 0))
        elif entry.get("tier") == "compute_kernel":
            metrics = analyze_category(run_dir, key)
            write_metrics(run_dir, metrics)
            findings = len(metrics.category_findings or [])
            results.append(AnalysisResult(key, metrics.status, findings))
    return results
