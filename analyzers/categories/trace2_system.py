"""Trace 2's system analyses in a comparative run (docs/compare.md#system-analyses-of-both-traces).

Trace 1's `cpu_idle` and `multi_kernel` documents are what a standalone run of trace 1 writes
(TraceLens analyses trace 1 only). Trace 2 gets the same two analyses, run by the same code on
its own model, perf report and platform, so the report can set the two traces' idle time,
exposed communication and copies side by side. They are kept apart from trace 1's documents
and never enter the priorities: a saving is always trace 1's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..compare.comparison import Comparison
from ..layout import CPU_IDLE, MULTI_KERNEL
from ..prepare.category_data import system_parts
from ..prepare.manifest import Manifest
from .cpu_idle import CpuIdleMetrics, analyze_cpu_idle
from .multi_kernel import MultiKernelMetrics, analyze_multi_kernel
from .system_inputs import SystemInputs, Timeline


@dataclass(frozen=True)
class Trace2System:
    """Trace 2's CPU/idle and multi-kernel documents."""

    cpu_idle: CpuIdleMetrics
    multi_kernel: MultiKernelMetrics

    def documents(self) -> dict[str, CpuIdleMetrics | MultiKernelMetrics]:
        return {CPU_IDLE: self.cpu_idle, MULTI_KERNEL: self.multi_kernel}


def trace2_inputs(manifest: Manifest, comparison: Comparison) -> SystemInputs | None:
    """Trace 2 as the system analyses see it; None when the manifest is not comparative. The
    manifest handed on carries trace 2's utilisation, the timeline fallback of the analyses."""
    util2 = manifest.trace2_gpu_utilization
    if manifest.comparison_scope != "comparative" or util2 is None:
        return None
    parts = system_parts(comparison.model)
    report = comparison.report
    return SystemInputs(
        manifest=manifest.model_copy(update={"gpu_utilization": util2}),
        timeline=Timeline.from_sheet(report.sheets["gpu_timeline"]),  # every report has it
        multi_kernel=parts.multi_kernel,
        fusion_candidates=[],
        unified=report.unified.summary if report.unified is not None else None,
        platform=comparison.platform,
        idle=parts.idle,
        kernels=parts.kernels,
        copies=parts.copies,
    )


def analyze_trace2(manifest: Manifest, comparison: Comparison) -> Trace2System | None:
    """Both system analyses of trace 2 (None outside a comparative run)."""
    inputs = trace2_inputs(manifest, comparison)
    if inputs is None:
        return None
    return Trace2System(analyze_cpu_idle(inputs), analyze_multi_kernel(inputs))
