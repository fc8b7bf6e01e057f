"""A filtered host side (`filtered_host_side`, `synthetic_formats.write_filtered_trace`): the
allocator-churn loop on an H100 with every runtime event dropped but the 255 launches, and no
`deviceProperties`, as a filtering or sampling exporter leaves it.

Planted answer (`filtered_planted`): P1 is the idle GPU, named `dispatch` under
`aten::convolution_backward` (the cudaFree/cudaMalloc inside ConvolutionBackward0 are gone, so
the operator in flight is all that is left), and every host-side finding is marked partial.
Trace health detects the filtering (every runtime call launched a GPU event, no device
properties: host_filter.py); the cpu_idle metrics carry `host_side.host_partial` and the idle
card says the named cause is a lower bound. The unfiltered trace is not flagged.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.findings.ranking.idle_advice import TITLES
from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.host_filter import PARTIAL_HOST
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.truth import assert_truthful, ranked

FILTERED = SITUATIONS["filtered_host_side"]
PLANTED = FILTERED.planted


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("filtered")


@cache
def _run(folder: Path):
    return ranked(FILTERED.write(folder / "filtered.json.gz"), "H100_SXM")


def _health(path: Path):
    return assess(build_model(load_trace(path)))


def test_health_detects_the_filtered_host_side(folder: Path) -> None:
    health = _health(FILTERED.write(folder / "filtered.json.gz"))
    assert health.host_partial and health.host_filtered is not None
    assert health.host_filtered.runtime_calls == health.linking.linked == 255
    (warning,) = [w for w in health.warnings if w.code == "host_side_filtered"]
    assert warning.severity == "warning" and "lower bound" in warning.message


def test_the_whole_trace_is_not_flagged(folder: Path) -> None:
    whole = SITUATIONS["allocator_churn_cuda"].write(folder / "whole.json.gz")
    health = _health(whole)
    assert not health.host_partial
    assert "host_side_filtered" not in [w.code for w in health.warnings]
    steps = ranked(whole, "H100_SXM")
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    assert idle.host_side.host_partial is False


def test_p1_is_the_operator_in_flight_marked_partial(folder: Path) -> None:
    assert PLANTED.partial_host and PLANTED.cause == "dispatch"
    steps = _run(folder)
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle"), top.title
    assert top.title.startswith(TITLES[PLANTED.cause]) and PLANTED.call_site in top.title
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    assert idle.host_side.host_partial is True
    steady = sum(c.steady_ms or 0.0 for c in idle.host_side.idle_causes)
    assert steady == pytest.approx(PLANTED.idle_ms, abs=0.01)
    assert_truthful(steps)


def test_the_idle_card_says_the_cause_is_a_lower_bound(folder: Path) -> None:
    (card,) = _run(folder).findings_of("cpu_idle").cards
    insight = dict(card.fields)["Insight"]
    assert PARTIAL_HOST in insight and "lower bound" in insight
