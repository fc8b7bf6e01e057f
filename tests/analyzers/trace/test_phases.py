"""Phases (trace/phases.py) on the generated warm-up situation: the warm-up iteration is found
from confident iterations (ProfilerStep# marks) and never from a low-confidence period of
repeating operators, which is as likely the layers of one step."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.analyzers.trace.idle_window import gpu_work
from rooflens.analyzers.trace.iterations import find_iterations
from rooflens.analyzers.trace.open_trace import open_trace
from rooflens.analyzers.trace.phases import find_phases


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder: Path = tmp_path_factory.mktemp("phases")
    return open_trace(SITUATIONS["warmup_in_window"].write(folder / "warmup.json.gz"))


def test_confident_iterations_find_the_warm_up(model) -> None:
    iterations = find_iterations(model)
    assert iterations.method == "profiler_step" and iterations.confident
    found = find_phases(iterations, gpu_work(model).window)
    planted = SITUATIONS["warmup_in_window"].planted
    assert found.summary is not None
    assert found.summary.warmup == list(planted.warmup_iterations)
    assert found.summary.steady == list(planted.steady_iterations)


def test_low_confidence_iterations_have_no_phases(model) -> None:
    unsure = find_iterations(model).model_copy(update={"confident": False})
    found = find_phases(unsure, gpu_work(model).window)
    assert found.summary is None and not found.has_steady
    assert all(len(region) == 0 for region in found.regions.values())
