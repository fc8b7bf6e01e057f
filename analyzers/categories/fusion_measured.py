"""Kernel fusion in a comparative run: the saving trace 2 measured.

See docs/compare.md#fusion-from-the-diff.

A comparative candidate is work trace 2 does with fewer kernels under the same operators, so
its saving is no projection: it is the time trace 1 spent beyond trace 2's, counted when it
reaches 0.1 ms and 2 % of the end-to-end time at full recovery.
"""

from __future__ import annotations

from ..prepare.comparative_fusion import ComparativeCandidate
from .kernel_fusion import (
    LOW_FACTOR,
    MID_FACTOR,
    MIN_IMPACT_SCORE,
    MIN_SAVINGS_MS,
    FusionEstimate,
    KernelFusionMetrics,
    classify_confidence,
    high_confidence_map,
)
from .system_inputs import SystemInputs

MATRIX_TYPES = ("GEMM", "CONV")


def measured_estimate(c: ComparativeCandidate, baseline_ms: float) -> FusionEstimate | None:
    """The estimate of one comparative candidate, or None when the gap is too small."""
    time1 = float(c.total_kernel_time_us_trace1)
    gap_us = time1 - float(c.total_kernel_time_us_trace2)
    high_ms = gap_us / 1000
    if gap_us <= 0 or high_ms < MIN_SAVINGS_MS:
        return None
    high = high_ms / baseline_ms * 100
    if high < MIN_IMPACT_SCORE:
        return None
    kernels = c.kernels_trace1
    names = [k["name"] for k in kernels]
    is_matrix = [any(t in str(k["type"]).upper() for t in MATRIX_TYPES) for k in kernels]
    return FusionEstimate(
        operation=str(c.base_name),
        impact_score=round(high * MID_FACTOR, 2),
        impact_score_low=round(high * LOW_FACTOR, 2),
        impact_score_high=round(high, 2),
        estimation="measured",
        bound_type="compute" if any(is_matrix) else "memory",
        time_ms=round(time1 / 1000, 3),
        instance_count=int(c.instance_count),
        kernel_count=len(kernels),
        modeled_kernel_count=len(kernels),
        delta_kernel_count=int(c.delta),
        confidence=classify_confidence(f"{c.base_name} {c.module_name}", names, is_matrix),
        affected_gpu_kernels=names,
        fusion_type="matrix_compute" if any(is_matrix) else "memory_bound",
    )


def analyze_measured_fusion(inputs: SystemInputs) -> KernelFusionMetrics:
    """The kernel-fusion document of a comparative run."""
    baseline_ms = inputs.manifest.gpu_utilization.total_time_ms
    candidates = [c for c in inputs.fusion_candidates if isinstance(c, ComparativeCandidate)]
    if not candidates or baseline_ms <= 0:
        return KernelFusionMetrics(status="NO_DATA", candidate_count=0, impact_estimates=[])
    estimates = [e for c in candidates if (e := measured_estimate(c, baseline_ms))]
    estimates.sort(key=lambda e: -e.impact_score)
    kernel_map = high_confidence_map(estimates)
    platform = inputs.platform
    return KernelFusionMetrics(
        status="OK",
        total_time_ms=round(sum(c.total_kernel_time_us_trace1 for c in candidates) / 1000, 3),
        candidate_count=len(candidates),
        estimated_count=len(estimates),
        total_impact_score=round(sum(e.impact_score for e in estimates), 2),
        platform=platform.name if platform else None,
        peak_hbm_bw_tbs=platform.mem_bw() / 1000.0 if platform else None,
        impact_estimates=estimates,
        high_confidence_kernel_map=kernel_map,
    )
