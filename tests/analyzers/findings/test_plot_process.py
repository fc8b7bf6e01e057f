"""The helper process that draws a command-line run's plot (findings/composing/plot_process.py)."""

from __future__ import annotations

import pytest

from rooflens.analyzers.findings.composing import plot_process
from rooflens.analyzers.findings.composing.plot import Bar, Savings, Segment, draw_png
from rooflens.analyzers.findings.composing.plot_process import PlotProcess

SEGMENTS = [Segment("gemm", "GEMM", 60.0, "#0072B2"), Segment("non_compute", "idle", 40.0, "#BBB")]
BAR = Bar(p_number=1, kind="system", category="cpu_idle", label="P1 GPU idle", low_ms=10.0,
          mid_ms=20.0, high_ms=30.0, mid_pct=20.0)  # fmt: skip
SAVINGS = Savings([BAR], 1, 20.0, 20.0)
JOB = ("A model on H100", 100.0, SEGMENTS, SAVINGS)


@pytest.mark.slow
def test_the_helper_draws_the_same_png_as_the_run_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    here = draw_png(*JOB)

    def not_here(*_: object) -> bytes:
        raise AssertionError("drawn in the run's own process")

    monkeypatch.setattr(plot_process, "draw_png", not_here)
    with PlotProcess() as helper:
        assert helper.alive
        png = helper.draw(*JOB)
        assert not helper.alive  # used once, then gone
    assert png == here


def test_a_helper_never_asked_is_stopped_on_exit() -> None:
    with PlotProcess() as helper:
        assert helper.alive
    assert not helper.alive


def test_a_dead_helper_means_drawing_here() -> None:
    helper = PlotProcess()
    assert helper._proc is not None
    helper._proc.kill()  # as if it had crashed
    helper._proc.wait()
    assert not helper.alive
    assert helper.draw(*JOB) == draw_png(*JOB)
