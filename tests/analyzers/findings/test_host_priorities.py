"""The host side reaches the priorities: on the generator's host-side traces the first item of
`priority_data.items` is the idle cause the trace was built with, worth the share of it the
estimator states (docs/analysis.md#one-impact-scale)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.findings.ranking.idle_advice import TITLES
from rooflens.analyzers.pipeline.steps import Pipeline
from rooflens.analyzers.synthetic.host import (
    write_blocking_item_trace,
    write_host_bound_trace,
    write_launch_bound_trace,
)
from tests.helpers import truth


def ranked(trace: Path) -> Pipeline:
    return truth.ranked(trace, "MI300X")


# the blocking trace's largest exposed idle is train_step's own Python after each drained
# queue (3.519 ms), ahead of the two .item() calls (1.923 ms; test_idle_causes.py)
CASES: dict[str, tuple[Callable[..., Path], str]] = {
    "host_bound": (write_host_bound_trace, "input_pipeline"),
    "blocking_item": (write_blocking_item_trace, "dispatch"),
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
    assert top.title.startswith(TITLES[cause])
    assert part.steady_ms is not None  # every step is steady state: priced on all of it
    truth.assert_replayed_idle_estimate(top, part.steady_ms, cause)
    assert f"{part.steady_ms:.1f} ms" in top.title
    totals = steps.priorities().saving_totals
    assert (
        totals is not None
        and totals.mid_ms <= totals.pool_ms["idle"] + totals.pool_ms["kernels"] + 1e-9
    )


def test_host_bound_idle_is_mostly_the_data_loader(tmp_path: Path) -> None:
    steps = ranked(write_host_bound_trace(tmp_path / "h.json.gz"))
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    loader = next(p for p in idle.host_side.idle_causes if p.cause == "input_pipeline")
    assert 70.0 < loader.percent_of_window < 90.0  # the plan idles ~80 % between steps
    assert loader.culprits[0].name.startswith("enumerate(DataLoader)#")
    top = steps.priorities().items[0]
    assert "`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`" in top.title
    assert idle.host_side.iterations is not None and idle.host_side.iterations.count >= 3
    assert idle.kernel_analysis is not None and idle.kernel_analysis.total_kernel_count > 0


def test_blocking_item_names_the_call_in_the_title(tmp_path: Path) -> None:
    steps = ranked(write_blocking_item_trace(tmp_path / "b.json.gz"))
    sync = next(i for i in steps.priorities().items if i.title.startswith(TITLES["sync"]))
    assert "`cudaStreamSynchronize` under `aten::item`" in sync.title
