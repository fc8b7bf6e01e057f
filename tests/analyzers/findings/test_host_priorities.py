"""The host side reaches the priorities: on the generator's host-side traces the first item of
`priority_data.items` is the idle cause the trace was built with, worth the share of it the
estimator states (docs/analysis.md#one-impact-scale)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.findings.candidates import CAUSE_RECOVERY, CAUSE_TITLES
from rooflens.analyzers.pipeline.steps import Pipeline
from rooflens.analyzers.trace.synthetic_host import (
    write_blocking_item_trace,
    write_host_bound_trace,
    write_launch_bound_trace,
)
from tests.helpers import truth


def ranked(trace: Path) -> Pipeline:
    return truth.ranked(trace, "MI300X")


CASES: dict[str, tuple[Callable[..., Path], str]] = {
    "host_bound": (write_host_bound_trace, "between_iterations"),
    "blocking_item": (write_blocking_item_trace, "host_blocking"),
    "launch_bound": (write_launch_bound_trace, "launch_bound"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("marked", [True, False], ids=["steps", "no-steps"])
def test_the_planted_cause_is_p1(tmp_path: Path, case: str, marked: bool) -> None:
    write, cause = CASES[case]
    steps = ranked(write(tmp_path / f"{case}.json.gz", profiler_steps=marked))
    items = steps.priorities().items
    top = items[0]
    assert (top.p_number, top.category, top.kind) == (1, "cpu_idle", "system")
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    part = next(p for p in idle.host_side.idle_causes if p.cause == cause)
    assert top.title.startswith(CAUSE_TITLES[cause])
    low, mid, high = (part.idle_ms * f for f in CAUSE_RECOVERY[cause])
    assert top.saving.range_ms == pytest.approx((low, mid, high), abs=1e-9)
    assert f"{part.idle_ms:.1f} ms" in top.title
    totals = steps.priorities().saving_totals
    assert (
        totals is not None
        and totals.mid_ms <= totals.pool_ms["idle"] + totals.pool_ms["kernels"] + 1e-9
    )


def test_host_bound_idle_is_mostly_between_iterations(tmp_path: Path) -> None:
    steps = ranked(write_host_bound_trace(tmp_path / "h.json.gz"))
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    between = next(p for p in idle.host_side.idle_causes if p.cause == "between_iterations")
    assert 70.0 < between.percent_of_window < 90.0  # the plan idles ~80 % between steps
    assert idle.host_side.iterations is not None and idle.host_side.iterations.count >= 3
    assert idle.kernel_analysis is not None and idle.kernel_analysis.total_kernel_count > 0


def test_blocking_item_names_the_call_in_the_title(tmp_path: Path) -> None:
    steps = ranked(write_blocking_item_trace(tmp_path / "b.json.gz"))
    top = steps.priorities().items[0]
    assert "Synchronize" in top.title and "aten::item" in top.title
