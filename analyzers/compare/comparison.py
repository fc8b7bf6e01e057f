"""A comparative run's second trace and everything set against trace 1, in memory.

See docs/compare.md#a-comparative-run. Trace 2 is read and reported on its own platform, the
two call trees are merged, and trace 1's sheets gain the comparison columns. `load_comparison`
is the one way in: the CLI's `rooflens compare` and the server's `load_trace(compare_with=...)`
both call it once trace 1 is loaded, and the pipeline carries the result as
`RunResults.comparison`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..perf.categories import CategoryTable
from ..perf.platforms import Platform
from ..report.build import PerfReport
from ..report.loading import Loaded, load_step, read_trace
from ..trace.errors import TraceError
from ..trace.health import HealthWarning, TraceHealth
from ..trace.model import TraceModel
from ..trace.open_trace import AUTO, CaptureChoice
from .comparability import Comparability, comparability
from .compare_columns import comparison_sheets
from .diff_stats import diff_stats
from .tree_diff import TreeDiff, diff_traces
from .what_changed import WhatChanged, what_changed

TRACE2 = "trace 2"  # how messages name the second trace
SAME_TRACE = HealthWarning(
    code="same_as_trace1",
    severity="warning",
    message=(
        "Trace 2 records exactly the events of trace 1 (the same trace, or a copy of it), so "
        "every difference in this comparison is zero. Pass the reference run's trace (another "
        "GPU, library version or code change) as trace 2."
    ),
)


@dataclass(frozen=True)
class Comparison:
    """Trace 2 and the tree diff of a comparative run (trace 1 is the run's own trace)."""

    trace_path: str  # trace 2 as the caller gave it
    model: TraceModel
    report: PerfReport  # trace 2's own perf report, on its own platform
    platform: Platform | None
    platform_source: str  # a sentence saying where trace 2's platform came from
    health: TraceHealth
    diff: TreeDiff
    diff_stats: pd.DataFrame
    trace1_sheets: dict[str, pd.DataFrame]  # trace 1's sheets with the comparison columns
    what_changed: WhatChanged
    comparability: Comparability


def compare(
    model1: TraceModel, report1: PerfReport, loaded2: Loaded, *, trace_path: str
) -> Comparison:
    """Set a loaded trace 2 against trace 1 (`report1` built from `model1`)."""
    model2, report2, health = loaded2.model, loaded2.report, loaded2.health
    if same_events(model1, model2):
        health = health.model_copy(update={"warnings": [SAME_TRACE, *health.warnings]})
    diff = diff_traces(model1, model2)
    stats = diff_stats(diff)
    alike = comparability(model1, model2)
    return Comparison(
        trace_path=trace_path,
        model=model2,
        report=report2,
        platform=loaded2.platform,
        platform_source=loaded2.platform_source,
        health=health,
        diff=diff,
        diff_stats=stats,
        trace1_sheets=comparison_sheets(report1, diff, stats),
        what_changed=what_changed(diff, report1, report2, collectives_headline=alike.same_job_size),
        comparability=alike,
    )


def same_events(model1: TraceModel, model2: TraceModel) -> bool:
    """Whether the two traces record the same events (names, start times, durations): a trace
    compared with itself, which a caller does by mistake more often than on purpose."""
    one, two = model1.recorded, model2.recorded
    if len(one) != len(two):
        return False
    columns = ["ts", "dur", "name"]  # Series.equals: NaN durations (metadata events) are equal
    return one[columns].reset_index(drop=True).equals(two[columns].reset_index(drop=True))


def read_trace2(
    trace2: str | Path,
    *,
    captures: CaptureChoice = AUTO,
    allow: Callable[[Path], bool] | None = None,
    text: Callable[[], bytes | bytearray] | None = None,
) -> tuple[TraceModel, TraceHealth]:
    """Read trace 2 as trace 1 is read (its graph-capture folder included) and check that it
    has GPU work; a TraceError names it as trace 2."""
    try:
        model2, health = read_trace(trace2, captures=captures, allow=allow, text=text)
    except TraceError as exc:
        raise TraceError(exc.path, f"{TRACE2}: {exc.problem}", exc.hint) from None
    if len(model2.gpu) == 0:
        raise TraceError(
            trace2,
            f"{TRACE2} holds no GPU events (no kernels, copies or memsets), so there is "
            "nothing to compare trace 1 with",
            "profile it with the GPU activity on, as trace 1 was",
        )
    return model2, health


def load_comparison(
    model1: TraceModel,
    report1: PerfReport,
    trace2: str | Path,
    *,
    platform: str | None = None,
    platform_file: str | Path | None = None,
    captures: CaptureChoice = AUTO,
    allow: Callable[[Path], bool] | None = None,
    text: Callable[[], bytes | bytearray] | None = None,
    categories: CategoryTable | None = None,
) -> Comparison:
    """Read trace 2 (`read_trace2`), choose its platform (a name, a file, else what the trace
    suggests) and compare it with trace 1."""
    model2, health = read_trace2(trace2, captures=captures, allow=allow, text=text)
    loaded2 = load_step(
        model2, health=health, platform=platform, platform_file=platform_file, categories=categories
    )
    return compare(model1, report1, loaded2, trace_path=str(trace2))
