"""Category data for one trace: what the category analyses need, in memory (docs/analysis.md).

The multi-kernel category appears when copies or collectives exist, the kernel-fusion
category when there are fusion candidates. Nothing here touches the run folder: the pipeline
hands the result to the analyses and to `analyzers.pipeline.folder`, which writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compare.comparison import Comparison
from ..perf.categories import default_table
from ..perf.platforms import Platform
from ..report.build import PerfReport
from ..trace.idle_causes import IdleBreakdown, idle_causes
from ..trace.kernel_counts import KernelCounts, kernel_counts
from ..trace.model import TraceModel
from .comparative import comparative_report, with_trace2
from .comparative_fusion import (
    ComparativeCandidate,
    comparative_candidates,
)
from .computation_time import row_computation
from .copies import CopyData, copy_data
from .fusion import FusionCandidate, fusion_candidates
from .kernel_rows import kernel_rows
from .manifest import CategoryTables, Manifest, categorise
from .multi_kernel import MultiKernelData, multi_kernel_data


@dataclass(frozen=True)
class SystemParts:
    """What the system analyses read of one trace besides its perf report: copies and
    collectives, the idle time by cause, the kernel counts, every copy by name. A comparative
    run computes them for trace 2 too (docs/compare.md#system-analyses-of-both-traces)."""

    multi_kernel: MultiKernelData
    idle: IdleBreakdown | None
    kernels: KernelCounts
    copies: CopyData


def system_parts(model: TraceModel) -> SystemParts:
    idle = idle_causes(model) if len(model.gpu) else None
    copies = copy_data(model, idle=idle)
    return SystemParts(multi_kernel_data(model), idle, kernel_counts(model), copies)


@dataclass(frozen=True)
class CategoryData:
    tables: CategoryTables
    multi_kernel: MultiKernelData
    fusion_candidates: list[FusionCandidate] | list[ComparativeCandidate]
    idle: IdleBreakdown | None = None
    kernels: KernelCounts | None = None
    copies: CopyData | None = None

    @property
    def manifest(self) -> Manifest:
        return self.tables.manifest


def prepare(
    model: TraceModel,
    report: PerfReport,
    platform: Platform | None,
    trace_path: str,
    output_dir: str,
    comparison: Comparison | None = None,
) -> CategoryData:
    """Split the run into categories; `output_dir` is the folder the manifest names. With a
    `comparison`, the scope is comparative: the categories are cut from trace 1's comparative
    tables and the manifest carries trace 2's figures (docs/compare.md)."""
    parts = system_parts(model)
    data = parts.multi_kernel
    has_multi_kernel = data.memcpy_summary.total_count > 0 or data.nccl_summary.total_count > 0
    attribution = report.unified.attribution if report.unified is not None else None
    summary = report.sheets.get("unified_perf_summary")
    if comparison is None:
        candidates: Any = fusion_candidates(model, summary, attribution)
    else:  # the diff says what trace 2 fused (docs/compare.md#fusion-from-the-diff)
        candidates = comparative_candidates(comparison)
    tables = categorise(
        report if comparison is None else comparative_report(report, comparison),
        platform,
        trace_path,
        output_dir,
        has_multi_kernel=has_multi_kernel,
        fusion_count=len(candidates),
        scope="standalone" if comparison is None else "comparative",
        computation=row_computation(model, report.unified) if report.unified else None,
        kernel_table=None if report.unified else kernel_rows(model, default_table()),
        one_off_idle_ms=parts.idle.one_off_idle_ms if parts.idle is not None else 0.0,
    )
    if comparison is not None:
        tables = with_trace2(tables, comparison)
    return CategoryData(tables, data, candidates, parts.idle, parts.kernels, parts.copies)
