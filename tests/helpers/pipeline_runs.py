"""Builders for the typed stages' inputs: a Pipeline over the generator's sample trace (with
no folder or a RunFolder), a manifest, category metadata and the system analyses' inputs.

The sample trace is `rooflens.analyzers.synthetic.sample`'s: a training step of a two-layer
transformer on one MI300X, so every stage has real input without ../shared.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rooflens.analyzers.categories.system_inputs import SystemInputs, Timeline
from rooflens.analyzers.perf.platforms import Platform, get_platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.steps import LOADED, Pipeline, RunResults
from rooflens.analyzers.prepare.categories import GpuUtilization
from rooflens.analyzers.prepare.fusion import FusionCandidate
from rooflens.analyzers.prepare.manifest import CategoryEntry, CategoryMetadata, Manifest
from rooflens.analyzers.prepare.multi_kernel import MultiKernelData
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

SAMPLE_PLATFORM = "MI300X"


@dataclass
class Ledger:
    """A run's state as the pipeline sees it: the steps done, in the order marked."""

    steps: list[str] = field(default_factory=list)

    def done(self, step: str) -> bool:
        return step in self.steps

    def mark(self, *steps: str) -> None:
        self.steps.extend(s for s in steps if s not in self.steps)


def sample_results(
    tmp_path: Path, *, seed: int = 0, platform: Platform | str | None = SAMPLE_PLATFORM
) -> RunResults:
    """A loaded run of a freshly generated sample trace (trace under `tmp_path/trace`,
    output folder named `tmp_path/run`, not created here)."""
    trace = write_sample_trace(tmp_path / "trace" / "sample.json.gz", seed=seed)
    chosen = get_platform(platform) if isinstance(platform, str) else platform
    model = build_model(load_trace(trace))
    report = build_report(model, chosen)
    return RunResults(model, report, chosen, str(trace), str(tmp_path / "run"))


def sample_pipeline(
    tmp_path: Path,
    *,
    with_folder: bool,
    ledger: Ledger | None = None,
    results: RunResults | None = None,
    **kw: Any,
) -> tuple[Pipeline, Ledger]:
    """A Pipeline over the sample trace, loaded (its ledger says so); `with_folder` gives it a
    RunFolder at `tmp_path/run`, else it writes nothing."""
    ledger = ledger if ledger is not None else Ledger([LOADED])
    results = results if results is not None else sample_results(tmp_path, **kw)
    folder = RunFolder(tmp_path / "run") if with_folder else None
    steps = Pipeline(results, folder, done=ledger.done, mark=ledger.mark, label="the sample run")
    return steps, ledger


def written(root: Path) -> set[str]:
    """Every file under `root`, as paths relative to it."""
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# --- typed inputs built by hand ---------------------------------------------------------------


def utilization(**values: float) -> GpuUtilization:
    return GpuUtilization(**values)


def entry(
    name: str,
    tier: str = "compute_kernel",
    gpu_kernel_time_ms: float | None = None,
    display_name: str | None = None,
    ops_count: int = 0,
) -> CategoryEntry:
    """A manifest entry; compute entries name their CSV and metadata as the preparation does."""
    compute = tier == "compute_kernel"
    return CategoryEntry(
        name=name,
        display_name=display_name or name,
        skill="generic-op-analyzer",
        tier=tier,  # type: ignore[arg-type]
        ops_count=ops_count,
        csv_file=f"category_data/{name}_ops.csv" if compute else None,
        metadata_file=f"metadata/{name}_metadata.json" if compute else None,
        gpu_kernel_time_ms=gpu_kernel_time_ms,
    )


def manifest(
    util: GpuUtilization | dict[str, float] | None = None,
    categories: Sequence[CategoryEntry] = (),
    *,
    scope: str = "standalone",
    platform: str = SAMPLE_PLATFORM,
) -> Manifest:
    if isinstance(util, dict):
        util = GpuUtilization(**util)
    return Manifest(
        platform=platform,
        trace_path="traces/t.json.gz",
        output_dir="run",
        comparison_scope=scope,  # type: ignore[arg-type]
        gpu_utilization=util or GpuUtilization(),
        categories=list(categories),
        top_operations=[],
    )


def category_metadata(
    key: str = "x",
    *,
    peak_hbm_bw_tbs: float = 5.3,
    max_achievable_tflops: dict[str, float] | None = None,
    util: GpuUtilization | dict[str, float] | None = None,
    platform: str = SAMPLE_PLATFORM,
) -> CategoryMetadata:
    if isinstance(util, dict):
        util = GpuUtilization(**util)
    return CategoryMetadata(
        platform=platform,
        peak_hbm_bw_tbs=peak_hbm_bw_tbs,
        max_achievable_tflops=max_achievable_tflops or {},
        memory_gb=192.0,
        trace_path="traces/t.json.gz",
        output_dir="run",
        category=key,
        category_name=key,
        gpu_utilization=util or GpuUtilization(),
    )


def system_inputs(
    the_manifest: Manifest,
    *,
    timeline: pd.DataFrame | Timeline | None = None,
    multi_kernel: MultiKernelData | dict[str, Any] | None = None,
    fusion_candidates: Sequence[FusionCandidate | dict[str, Any]] = (),
    unified: pd.DataFrame | None = None,
    platform: Platform | None = None,
) -> SystemInputs:
    """What the pipeline hands the system analyses; a timeline may be given as the perf
    report's gpu_timeline table, candidates and multi-kernel data as their JSON documents."""
    if isinstance(timeline, pd.DataFrame):
        timeline = Timeline.from_sheet(timeline)
    if isinstance(multi_kernel, dict):
        multi_kernel = MultiKernelData.model_validate(multi_kernel)
    candidates = [c if isinstance(c, FusionCandidate) else candidate(c) for c in fusion_candidates]
    return SystemInputs(
        manifest=the_manifest,
        timeline=timeline,
        multi_kernel=multi_kernel,
        fusion_candidates=candidates,
        unified=unified,
        platform=platform or get_platform(SAMPLE_PLATFORM),
    )


def candidate(document: dict[str, Any]) -> FusionCandidate:
    """A fusion candidate from (part of) its fusion_candidates.json entry."""
    kernels = list(document.get("kernels") or [])
    full = {
        "parent_chain": [],
        "eligible_kernel_count": len(kernels),
        "kernel_type_signature": [str(k.get("type")) for k in kernels],
        "kernel_type_summary": {},
        **document,
    }
    return FusionCandidate(**full)
