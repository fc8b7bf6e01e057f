"""A whole run of one generated trace, in memory: load, perf report, then every pipeline step
up to the composed report (no folder is written)."""

from __future__ import annotations

from pathlib import Path

from rooflens.analyzers.pipeline.steps import REPORTED, RunResults
from tests.helpers.truth import ranked


def run_trace(trace: Path, platform: str) -> RunResults:
    """The results of every step, through `analysis.md`'s text, for `trace` on `platform`."""
    return ranked(trace, platform, until=REPORTED).results
