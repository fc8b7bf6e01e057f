"""System-level analyses of a run folder (agent_workflow.md §3.12): CPU/idle time and
multi-kernel (memcpy, communication, overlap) issues. Pure functions of the run folder's
category data; `write_metrics` writes a document atomically."""

from rooflens.analyzers.system.cpu_idle import CpuIdleMetrics, analyze_cpu_idle
from rooflens.analyzers.system.multi_kernel import MultiKernelMetrics, analyze_multi_kernel
from rooflens.analyzers.system.timeline import write_metrics

__all__ = [
    "CpuIdleMetrics",
    "MultiKernelMetrics",
    "analyze_cpu_idle",
    "analyze_multi_kernel",
    "write_metrics",
]
