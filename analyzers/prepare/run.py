"""Prepare a run folder for the category analyses (agent_workflow.md §2, standalone scope).

Writes `category_data/multi_kernel_data.json`, `category_data/fusion_candidates.json`, the
per-category CSVs, tree data and metadata, and `category_data/category_manifest.json` beside
the perf report of the same run.
"""

from __future__ import annotations

import json
from pathlib import Path

from rooflens.analyzers.perf.platforms import Platform
from rooflens.analyzers.prepare.fusion import fusion_candidates, write_fusion_candidates
from rooflens.analyzers.prepare.manifest import Manifest, export_categories
from rooflens.analyzers.prepare.multi_kernel import multi_kernel_data
from rooflens.analyzers.report.build import PerfReport
from rooflens.analyzers.report.write_csv import atomic_write_bytes
from rooflens.analyzers.trace.model import TraceModel


def prepare_run(
    model: TraceModel,
    report: PerfReport,
    platform: Platform,
    run_dir: Path,
    trace_path: str,
    *,
    recorded_dir: Path | None = None,
) -> Manifest:
    """Category data for one trace. The multi-kernel category appears when copies or
    collectives exist, the kernel-fusion category when there are fusion candidates.
    `recorded_dir` is the folder the manifest names (default `run_dir`): the final folder
    when `run_dir` is a staging folder swapped into place later."""
    data = multi_kernel_data(model)
    path = run_dir / "category_data" / "multi_kernel_data.json"
    text = json.dumps(data.model_dump(mode="json"), indent=2) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))
    has_multi_kernel = data.memcpy_summary.total_count > 0 or data.nccl_summary.total_count > 0
    candidates = fusion_candidates(model, report.sheets.get("unified_perf_summary"))
    write_fusion_candidates(run_dir, candidates)
    return export_categories(
        report,
        platform,
        run_dir,
        trace_path,
        has_multi_kernel=has_multi_kernel,
        has_fusion=bool(candidates),
        fusion_count=len(candidates),
        recorded_dir=recorded_dir,
    )
