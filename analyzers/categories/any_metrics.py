"""The metrics of any analysis, compute or system, seen alike: its JSON document, status and
number of findings. The one place that knows which kinds of metrics exist."""

from __future__ import annotations

from typing import Any

from ..layout import CPU_IDLE, KERNEL_FUSION, MULTI_KERNEL
from .cpu_idle import CpuIdleMetrics
from .kernel_fusion import KernelFusionMetrics
from .models import CategoryMetrics
from .multi_kernel import MultiKernelMetrics

Metrics = CategoryMetrics | CpuIdleMetrics | MultiKernelMetrics | KernelFusionMetrics
SYSTEM_METRICS: dict[str, type[Metrics]] = {
    CPU_IDLE: CpuIdleMetrics,
    MULTI_KERNEL: MultiKernelMetrics,
    KERNEL_FUSION: KernelFusionMetrics,
}


def metrics_document(metrics: Metrics) -> dict[str, Any]:
    """`<key>_metrics.json` as written in the run folder."""
    if isinstance(metrics, CategoryMetrics):
        return metrics.document()
    return metrics.model_dump(mode="json")


def metrics_from_document(key: str, document: dict[str, Any]) -> Metrics:
    """The typed metrics of a document written by `metrics_document` (a restored run)."""
    kind = SYSTEM_METRICS.get(key)
    if kind is None:
        return CategoryMetrics.model_validate(document)
    return kind.model_validate(document)


def finding_count(metrics: Metrics) -> int:
    if isinstance(metrics, CategoryMetrics):
        return len(metrics.category_findings or ())
    return len(metrics.impact_estimates or ())


def failed(metrics: Metrics) -> bool:
    return metrics.status == "ERROR"
