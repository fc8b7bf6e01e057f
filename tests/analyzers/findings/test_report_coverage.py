"""What this analysis could and could not see: roofline coverage by category, the unmodelled
operations and why, and every trace-health warning (hand-made metrics, worked by hand)."""

from __future__ import annotations

from dataclasses import replace

from rooflens.analyzers.categories.models import CategoryMetrics, Efficiency, Operation
from rooflens.analyzers.findings.composing.compose import compose_report
from rooflens.analyzers.findings.composing.coverage import coverage, what_we_saw
from rooflens.analyzers.trace.health import HealthWarning

DIMS = [[64, 128], [128, 256]]


def _op(
    name: str,
    time_ms: float,
    eff: float | None,
    *,
    anomaly: bool = False,
    dims: list | None = DIMS,
    **extra: object,
) -> Operation:
    efficiency = Efficiency(efficiency_percent=eff, is_anomaly=anomaly)
    return Operation.model_validate({
        "name": name, "count": 1, "time_ms": time_ms, "percent_of_category": 0.0,
        "percent_of_total": 0.0, "efficiency": efficiency, "Input Dims": dims, **extra,
    })  # fmt: skip


# gemm: 1.0 ms, all modelled. elementwise: 1.1 ms, of which only aten::add's 0.5 ms has a
# usable roofline (copy_: no model, mul: 130 % of its roof, neg: no shapes, cat: a stated reason)
METRICS = {
    "gemm": CategoryMetrics(category="gemm", status="OK", operations=(_op("aten::mm", 1.0, 20.0),)),
    "elementwise": CategoryMetrics(category="elementwise", status="OK", operations=(
        _op("aten::add", 0.5, 60.0),
        _op("aten::copy_", 0.3, None),
        _op("aten::mul", 0.15, 130.0, anomaly=True),
        _op("aten::neg", 0.1, None, dims=[[], []]),
        _op("aten::cat", 0.05, None, unmodelled_reason="a tensor list without shapes"),
    )),
}  # fmt: skip


def test_coverage_by_category() -> None:
    rows = {r.category: r for r in coverage(METRICS)}
    assert (rows["gemm"].kernel_ms, rows["gemm"].modelled_ms, rows["gemm"].percent) == (
        1.0,
        1.0,
        100.0,
    )
    assert rows["elementwise"].kernel_ms == 1.1 and rows["elementwise"].modelled_ms == 0.5
    assert round(rows["elementwise"].percent, 1) == 45.5


def test_the_section_says_what_was_unmodelled_and_why() -> None:
    text = what_we_saw(METRICS, [])
    # 1.5 of the 2.1 ms have a roofline: 71.4 %
    assert "**Roofline coverage.** 71.4 % of the compute categories' kernel time (1.50 of " in text
    assert "| `elementwise` | 1.10 | 0.50 | 45.5 % |" in text
    assert "| `gemm` | 1.00 | 1.00 | 100.0 % |" in text
    copy_ = "- `aten::copy_` (`elementwise`, 0.300 ms): no performance model for this operation."
    assert copy_ in text
    assert "- `aten::mul` (`elementwise`, 0.150 ms): above 110 % of its roofline" in text
    assert "- `aten::neg` (`elementwise`, 0.100 ms): its input shapes were not recorded" in text
    # a perf model's own message may quote the trace: a code span
    assert "- `aten::cat` (`elementwise`, 0.050 ms): `a tensor list without shapes`." in text
    assert "**Trace health.** No warning" in text


def test_every_health_warning_is_listed(run) -> None:
    shapes = "Shapes missing. Profile with record_shapes=True."
    warnings = (
        HealthWarning(code="no_shapes", severity="warning", message=shapes),
        HealthWarning(
            code="no_profiler_steps", severity="info", message="No steps. Call prof.step()."
        ),
    )
    text = compose_report(replace(run.inputs, health=warnings))
    section = text.split("## What this analysis could and could not see\n", 1)[1].split("\n## ")[0]
    assert "- ⚠️ `no_shapes`: Shapes missing. Profile with record_shapes=True." in section
    assert "- ℹ️ `no_profiler_steps`: No steps. Call prof.step()." in section
    assert (
        text.index("## Priorities")
        < text.index("## What this analysis")
        < text.index("## Compute Kernel Optimizations")
    )
