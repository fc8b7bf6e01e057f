"""Iterations of a shared trace found both ways (tests/analyzers/trace/test_iterations.py
holds the planted answers)."""

from __future__ import annotations

import pytest

from rooflens.analyzers.trace.iterations import find_iterations
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared


def test_resnet_steps_found_both_ways_hold_the_same_kernels(shared):
    model = build_model(load_trace(shared / "traces/mi300/resnet_act_checkpoint.json.gz"))
    marked = find_iterations(model)
    repeats = find_iterations(model, method="repeating_ops")
    assert marked.method == "profiler_step"
    assert repeats.method == "repeating_ops"
    assert marked.count == repeats.count == 3
    assert [it.gpu_events for it in repeats.iterations] == [
        it.gpu_events for it in marked.iterations
    ]
    for a, b in zip(marked.iterations, repeats.iterations, strict=True):
        assert a.gpu_start_ms == pytest.approx(b.gpu_start_ms, abs=0.1)
