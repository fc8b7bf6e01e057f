"""A whole run of one generated trace, in memory: load, perf report, then every pipeline step
up to the composed report (no folder is written)."""

from __future__ import annotations

from pathlib import Path

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.steps import LOADED, REPORTED, Pipeline, RunResults
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model


def run_trace(trace: Path, platform: str) -> RunResults:
    """The results of every step, through `analysis.md`'s text, for `trace` on `platform`."""
    chosen = get_platform(platform)
    model = build_model(load_trace(trace))
    results = RunResults(model, build_report(model, chosen), chosen, str(trace), "run")
    done = [LOADED]
    steps = Pipeline(results, None, done=done.__contains__, mark=lambda *s: done.extend(s))
    steps.run(until=REPORTED)
    return results
