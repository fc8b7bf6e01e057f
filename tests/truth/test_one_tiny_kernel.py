"""One tiny kernel (`one_tiny_kernel`, `synthetic_phases.TINY_KERNEL`): a compiled call
launches a single 1.76 µs Triton kernel, which is the whole GPU window, and a stray
`ProfilerStep#3` annotation lasts 13.336 s on another thread with no GPU work.

Planted answer: nothing to rank, no saving, no iteration. A window under
`impact_scale.MIN_WINDOW_US` (20 µs) of GPU time gets no P-item; `priority_data.json` and the
report's Executive Summary say why (`nothing_to_rank`). Before, the kernel became P1 with a
saving of "85-114 % of the window" (its time rounded to 0.002 ms against a 0.00176 ms
window): no share or range is ever above 100 % either (`Saving.percent` clamps to the window).

`assert_truthful`'s category-time check is left out here: the manifest rounds each category's
kernel time to 0.001 ms, 0.002 against 0.00176 ms of computation, a 13.6 % difference that
only a window this short shows (a rounding of the manifest, not of the ranking);
`rooflens validate`'s time check allows that rounding, and the run validates.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.findings.ranking.impact_scale import MIN_WINDOW_US, Saving
from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.cli.main import main
from tests.helpers.truth import cap_problems, estimate_problems, ranked, share_problems

SITUATION = SITUATIONS["one_tiny_kernel"]
PLAN = SITUATION.plan


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    trace = SITUATION.write(tmp_path_factory.mktemp("tiny") / "one_tiny_kernel.json.gz")
    return ranked(trace, "H100_SXM", until="reported")


def test_nothing_to_rank_with_the_reason(steps) -> None:
    assert SITUATION.planted.p1 == "nothing" and SITUATION.planted.estimate_ms is None
    data = steps.priorities()
    assert data.baseline_ms == pytest.approx(PLAN.kernel_us / 1e3, abs=1e-6)
    assert data.items == []
    reason = data.nothing_to_rank
    assert reason is not None and reason.startswith("Nothing to rank")
    assert "1.76 µs" in reason and f"{MIN_WINDOW_US:g} µs" in reason
    assert data.saving_totals is not None and data.saving_totals.mid_ms == 0.0
    assert "nothing_to_rank" in data.model_dump(mode="json")


def test_the_summary_says_it_and_no_item_is_drawn(steps) -> None:
    report = steps.results.report_text
    summary = report.split("## Executive Summary", 1)[1].split("\n## ", 1)[0]
    assert steps.priorities().nothing_to_rank in summary
    assert "### 🔴 P1" not in report and "% of the window)" not in summary
    assert share_problems(steps) == [] and cap_problems(steps) == []
    assert estimate_problems(steps) == []


def test_the_stray_step_is_no_iteration(steps) -> None:
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    assert idle.host_side.iterations is None
    assert SITUATION.planted.steady_iterations == ()


def test_a_saving_is_never_more_than_its_window() -> None:
    """The rounding that gave "85-114 %": a 0.002 ms saving of a 0.00176 ms window."""
    saving = Saving(low_ms=0.0015, mid_ms=0.0017, high_ms=0.002, cap_ms=0.002, pool="kernels",
                    basis="test")  # fmt: skip
    assert saving.percent(0.00176) == (85.23, 96.59, 100.0)


def test_a_window_of_the_threshold_is_ranked(tmp_path: Path) -> None:
    """The rule is the window, not the kernel count: the same kernel lasting 20 µs ranks."""
    trace = SITUATION.write(tmp_path / "longer.json.gz", plan=type(PLAN)(kernel_us=MIN_WINDOW_US))
    data = ranked(trace, "H100_SXM").priorities()
    assert data.nothing_to_rank is None and data.items


@pytest.mark.slow
def test_the_run_validates(tmp_path: Path, capsys) -> None:
    trace = SITUATION.write(tmp_path / "one_tiny_kernel.json.gz")
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--platform", "H100_SXM", "--out", str(out)]) == 0
    assert main(["validate", str(out)]) == 0, capsys.readouterr().out
