"""Hand-offs between threads (replay/graph.py): the generator's single-process loader step
runs its backward on a second thread (`single_process_loader` of synthetic/situations.py),
whose calls wait out a long gap for the main thread's forward. With the hand-off, removing the
loader's host code takes each step down to its GPU work; without it, the backward thread
would keep its recorded gaps and the removal would buy a sixth of that."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.replay import graph as graph_module
from rooflens.analyzers.replay.what_if import what_if
from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.analyzers.trace.open_trace import open_trace

LOADER = "host:_SingleProcessDataLoaderIter.__next__=0"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("hand_off") / "loader.json.gz"
    return open_trace(SITUATIONS["single_process_loader"].write(Path(path)))


def test_the_backward_thread_is_handed_over(model) -> None:
    found = what_if(model, [LOADER])
    rule = next(a for a in found.assumptions if "another thread" in a.rule)
    assert rule.events > 0
    (removed,) = found.changes
    # the steps are done as far apart as the planted steps after the first (its own span is
    # the first one's); the loader holds 48.8-61.4 ms of each, what is left is GPU work
    planted = SITUATIONS["single_process_loader"].planted.step_ms
    assert found.time_per_step_ms == pytest.approx(sum(planted[1:]) / (len(planted) - 1), abs=0.01)
    assert removed.predicted_step_ms < 0.1 * found.time_per_step_ms
    assert found.replay_error_pct < 0.01


def test_without_hand_offs_the_removal_buys_little(model, monkeypatch) -> None:
    monkeypatch.setattr(graph_module, "HAND_OFF_GAP_US", float("inf"))
    found = what_if(model, [LOADER])
    (removed,) = found.changes
    # only the steps' ends move (the main thread's share); the backward waits out its gaps
    assert removed.saving_ms < 0.2 * found.time_per_step_ms
