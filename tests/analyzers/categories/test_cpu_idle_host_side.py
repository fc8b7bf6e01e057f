"""cpu_idle on a whole run: kernel counts taken from the trace (TraceLens writes them empty)
and the host side (iterations, idle causes) of the run's trace model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.trace.kernel_counts import SHORT_KERNEL_US
from tests.helpers.pipeline_runs import sample_pipeline


def test_kernel_counts_and_idle_causes_come_from_the_trace(tmp_path: Path) -> None:
    steps, _ = sample_pipeline(tmp_path, with_folder=False)
    steps.prepare()
    metrics = steps.analyze("cpu_idle")
    assert isinstance(metrics, CpuIdleMetrics)
    with gzip.open(steps.results.trace_path) as raw:
        events = json.load(raw)["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    counts = metrics.kernel_analysis
    assert counts is not None
    assert counts.total_kernel_count == len(kernels) > 0  # every kernel of the sample is linked
    assert counts.short_kernel_count == sum(e["dur"] < SHORT_KERNEL_US for e in kernels)
    mean = sum(e["dur"] for e in kernels) / len(kernels)
    assert abs(counts.avg_kernel_time_us - mean) < 1e-3
    assert sum(counts.kernel_count_by_category.values()) == len(kernels)
    host = metrics.host_side
    assert host is not None and host.iterations is not None
    assert host.iterations.method == "profiler_step" and host.iterations.count == 1
    idle_ms = metrics.gpu_utilization.idle_time_ms if metrics.gpu_utilization else -1
    assert abs(sum(p.idle_ms for p in host.idle_causes) - idle_ms) < 0.005
