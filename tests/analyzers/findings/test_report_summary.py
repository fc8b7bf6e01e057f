"""The Executive Summary, the Top Operations columns and the Appendix's labels, on the
hand-made run of conftest.py (figures worked out by hand from its 10 ms window)."""

from __future__ import annotations

from dataclasses import replace

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics, HostSide, IterationSummary
from rooflens.analyzers.findings.composing.comparative import ReportComparison, category_times
from rooflens.analyzers.findings.composing.compose import compose_report
from rooflens.analyzers.findings.composing.prose import ReportProse
from rooflens.analyzers.findings.composing.summary import iteration_line
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.categories import GpuUtilization
from tests.helpers.pipeline_runs import entry, manifest


def test_executive_summary_states_the_window_busy_idle_and_top_fixes(run):
    """10 ms window, 70 % compute, 30 % idle (hand-set); the top three items in P order."""
    text = run.compose()
    summary = text.split("## Executive Summary\n", 1)[1].split("\n## ", 1)[0]
    assert "profiled step" not in summary and "GPU time" not in summary
    assert "- **Analysed window**: 10.00 ms, from the first to the last GPU event" in summary
    assert "- **GPU busy**: 7.00 ms (70.00 %): compute 7.00 ms (70.00 %), exposed " in summary
    assert "- **GPU idle**: 3.00 ms (30.00 %)." in summary
    assert "**Iterations**" not in summary  # the host side found none: no line
    assert summary.count("  - P") == 3
    p1 = "  - P1: cpu_idle item — could save 0.75–2.25 ms (mid 1.50 ms, 15.00 % of the window)"
    p3 = "  - P3: elementwise item — could save 0.150–0.250 ms (mid 0.200 ms, 2.00 % of the"
    assert p1 in summary and p3 in summary
    assert "Together they could save at most 2.32 ms (23.20 % of the window)" in summary
    assert "| GPU Busy % | 70.00% |" in summary


def test_submitted_prose_replaces_only_the_paragraph(run):
    prose = ReportProse(summary="The GPU waits on the host most of the time.")
    text = compose_report(replace(run.inputs, prose=prose))
    assert "The GPU waits on the host most of the time." in text
    assert "This report ranks" not in text
    assert "- **GPU idle**: 3.00 ms (30.00 %)." in text


def test_top_bottleneck_share_never_passes_100_percent(run):
    """Categories holding more than the timeline's computation (5 ms of a 10 ms window, but
    6 + 2 ms of category kernel time): shares are of the 8 ms they hold, not of 5 ms."""
    util = {"total_time_ms": 10.0, "computation_time_percent": 50.0, "idle_time_percent": 50.0}
    cats = [entry("gemm", gpu_kernel_time_ms=6.0, display_name="GEMM", ops_count=3),
            entry("elementwise", gpu_kernel_time_ms=2.0, display_name="Elementwise")]  # fmt: skip
    text = compose_report(replace(run.inputs, manifest=manifest(util, cats, platform="MI300X")))
    assert "| Top Bottleneck Category | `GEMM` (75.0% of compute time) |" in text
    assert "| 1 | `GEMM` | 6.0 | 75.0% |" in text and "| 2 | `Elementwise` | 2.0 | 25.0% |" in text


def test_a_category_only_trace_2_has_is_named_as_the_perf_report_names_it(run):
    """Trace 2's largest category is one trace 1 lacks (convolution, keyed `conv_fwd` in the
    manifest): the metric table names it `CONV_fwd`, as every other category is named."""
    util2 = GpuUtilization(total_time_ms=8.0, computation_time_percent=75.0)
    rows = [{"op category": "conv_fwd", "total_direct_kernel_time_ms": 4.5},
            {"op category": "gemm", "total_direct_kernel_time_ms": 1.5}]  # fmt: skip
    times = category_times(rows)
    compared = ReportComparison("H100_SXM", util2, times)
    scoped = run.inputs.manifest.model_copy(update={"comparison_scope": "comparative"})
    text = compose_report(replace(run.inputs, manifest=scoped, comparison=compared))
    row = "| Top Bottleneck Category | `GEMM` (57.1% of compute time) | `CONV_fwd` (75.0% "
    assert row in text
    assert "conv_fwd` (" not in text
    assert compared.display2("sdpa_bwd") == "SDPA_bwd" and compared.display2("mine") == "mine"


def test_a_platform_without_measured_figures_shows_datasheet_peaks_only(run):
    """V100 SXM2: 900 GB/s and 125 TFLOPS FP16 on its datasheet; no BF16, FP8 or FP4."""
    text = compose_report(replace(run.inputs, platform=get_platform("V100_SXM2")))
    hardware = text.split("### Hardware Reference", 1)[1]
    assert "| HBM bandwidth, peak (datasheet) | 0.9 TB/s |" in hardware
    assert "| FP16 matrix, peak (datasheet) | 125 TFLOPS |" in hardware
    assert "| BF16 matrix, peak (datasheet) | not published |" in hardware
    assert "| FP4 matrix, peak (datasheet) | not published |" in hardware
    assert "| The roofline uses | peak (datasheet) |" in hardware
    assert "measured" not in hardware and "MAF" not in text and "— TFLOPS" not in text


def test_a_measured_platform_labels_both_figures(run):
    """MI300X: datasheet 1307.4 TFLOPS BF16, measured 708; bandwidth 5.3 TB/s both."""
    hardware = run.compose().split("### Hardware Reference", 1)[1]
    assert "| BF16 matrix, peak (datasheet) | 1307.4 TFLOPS |" in hardware
    assert "| BF16 matrix, max achievable (measured) | 708 TFLOPS |" in hardware
    assert "| HBM bandwidth, max achievable (measured) | 5.3 TB/s |" in hardware
    assert "| FP4 matrix, peak (datasheet) | not published |" in hardware


def test_iterations_line_from_the_host_side(run):
    """Five ProfilerStep# iterations of 9-12 ms (median 10 ms) found by cpu_idle's host side."""
    found = IterationSummary(method="profiler_step", confident=True, count=5, mean_ms=10.2,
                             median_ms=10.0, cv=0.11, min_ms=9.0, max_ms=12.0)  # fmt: skip
    side = HostSide(iterations=found, idle_causes=[], call_sites=[])
    idle = CpuIdleMetrics(status="OK", idle_flagged=True, host_side=side)
    text = compose_report(replace(run.inputs, metrics={**run.inputs.metrics, "cpu_idle": idle}))
    line = "- **Iterations**: 5 (from ProfilerStep# marks); 10.00 ms per iteration (median; "
    assert line + "9.00–12.00 ms, CV 0.11)." in text
    unsure = found.model_copy(update={"method": "repeating_ops", "confident": False})
    assert iteration_line(unsure).startswith("5 (from repeating operators, low confidence); ")
    one = found.model_copy(update={"count": 1, "min_ms": 10.0, "max_ms": 10.0})
    assert iteration_line(one) == "1 (from ProfilerStep# marks); 10.00 ms."
    assert iteration_line(None) is None
