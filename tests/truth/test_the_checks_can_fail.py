"""The corpus's checks (tests/helpers/truth.py) catch what they look for: a run of the
elementwise-bound trace passes them, and the same run with one planted fault each fails."""

from __future__ import annotations

import dataclasses

import pytest

from rooflens.analyzers.synthetic.models import PLATFORM, write_elementwise_bound_trace
from tests.helpers.truth import (
    RunView,
    cap_problems,
    category_time_problem,
    estimate_problems,
    ranked,
    share_problems,
)


@pytest.fixture(scope="module")
def view(tmp_path_factory) -> RunView:
    trace = write_elementwise_bound_trace(tmp_path_factory.mktemp("truth") / "ew.json.gz")
    steps = ranked(trace, PLATFORM, until="reported")
    return RunView.of(steps)


def test_the_clean_run_passes(view: RunView) -> None:
    assert view.report is not None and "Top Bottleneck Category" in view.report
    assert share_problems(view) == [] and cap_problems(view) == []
    assert category_time_problem(view) is None and estimate_problems(view) == []


def test_a_share_over_100_in_the_summary_is_caught(view: RunView) -> None:
    report = view.report.replace("(73.8% of compute time)", "(528.8% of compute time)")
    assert report != view.report
    (problem,) = share_problems(dataclasses.replace(view, report=report))
    assert "528.8% of compute time" in problem


def test_an_item_capped_beyond_its_pool_is_caught(view: RunView) -> None:
    top = view.priorities.items[0]
    saving = top.saving.model_copy(update={"cap_ms": 100.0})
    items = [top.model_copy(update={"saving": saving}), *view.priorities.items[1:]]
    priorities = view.priorities.model_copy(update={"priorities": items})
    (problem,) = cap_problems(dataclasses.replace(view, priorities=priorities))
    assert "capped by 100.000 ms" in problem


def test_a_quantified_estimate_from_an_anomalous_row_is_caught(view: RunView) -> None:
    metrics = dict(view.metrics)
    gemm = metrics["gemm"]
    (op,) = gemm.operations
    anomalous = op.model_copy(
        update={"efficiency": op.efficiency.model_copy(update={"is_anomaly": True})}
    )
    metrics["gemm"] = gemm.model_copy(update={"operations": (anomalous,)})
    (problem,) = estimate_problems(dataclasses.replace(view, metrics=metrics))
    assert problem == "gemm aten::mm: quantified without a roofline"
