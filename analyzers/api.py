"""The engine from Python: `rooflens.analyze(path)` returns a `Run` held in memory, the
analysis the command line and the MCP server run, with nothing written until `Run.save`
(docs/python-api.md).

A `Run` computes what is asked of it: its tables exist once the trace is read, `metrics` and
`priorities` run the analyses and the ranking on first use, `report` composes the Markdown.
Names from the trace are data here as everywhere: the HTML summary a notebook shows escapes
them, and the Markdown keeps its code spans.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .categories.any_metrics import Metrics
from .compare.comparison import load_comparison
from .findings.composing.plot import draw_figure, plot_layout, plot_title
from .findings.ranking.impact_scale import PriorityItem
from .findings.ranking.priorities import PriorityData
from .perf.categories import load_table
from .pipeline.ledger import (
    ComparedTrace,
    RunRecord,
    TraceIdentity,
    check_destination,
    new_run_id,
    staged_output,
)
from .pipeline.sealed import SealedRun
from .pipeline.steps import (
    AGGREGATED,
    ANALYSED,
    LOADED,
    REPORTED,
    STEP_ORDER,
    NotAnalysable,
    Pipeline,
    RunResults,
)
from .report.loading import Loaded, load_step, missing_gpu_work, read_trace
from .trace.health import TraceHealth
from .trace.inspect import Inspection, inspect_trace
from .trace.open_trace import AUTO, CaptureChoice

if TYPE_CHECKING:
    from matplotlib.figure import Figure

IN_MEMORY = "(in memory)"  # the output folder a run names until it is saved
HTML_ITEMS = 10  # priority items the notebook summary lists


def analyze(
    trace: str | Path,
    *,
    platform: str | None = None,
    platform_file: str | Path | None = None,
    compare_with: str | Path | None = None,
    platform2: str | None = None,
    categories: str | Path | None = None,
    captures: CaptureChoice = AUTO,
    until: str = REPORTED,
) -> Run:
    """Read `trace` and analyse it in memory up to `until` (a step of `STEP_ORDER`: loaded,
    prepared, analysed, drafted, aggregated, reported); later steps run when asked for.

    `platform` names a GPU (`rooflens platforms` lists them) or `platform_file` gives one;
    without either the trace's device properties choose it. `compare_with` makes a
    comparative run against trace 2 (`platform2` for its GPU). Raises TraceError for a trace
    that cannot be read, NotAnalysable for one with no GPU work to analyse."""
    if until not in STEP_ORDER:
        raise ValueError(f"until must be one of {', '.join(STEP_ORDER)}, not {until!r}")
    table = load_table(categories)
    model, health = read_trace(trace, captures=captures)
    missing = missing_gpu_work(model) if until != LOADED else None
    if missing:
        raise NotAnalysable(f"{Path(trace).name} cannot be analysed: {missing}")
    loaded = load_step(
        model, health=health, platform=platform, platform_file=platform_file, categories=table
    )
    comparison = None
    if compare_with is not None:
        comparison = load_comparison(
            model, loaded.report, compare_with, platform=platform2, captures=captures,
            categories=table,
        )  # fmt: skip
    results = RunResults.of(loaded, str(trace), IN_MEMORY, comparison)
    run = Run(
        results, health, loaded.platform_source, Settings(platform_file, compare_with, captures)
    )
    run.compute(until)
    return run


def inspect(trace: str | Path, *, include_unlinked: bool = False) -> Inspection:
    """The GPU timeline (pooled and per device) and the trace's health, without analysing."""
    return inspect_trace(trace, include_unlinked=include_unlinked)


@dataclass(frozen=True)
class Settings:
    """What `analyze` was given beyond the trace, kept for `Run.save`'s `run.json`."""

    platform_file: str | Path | None
    compare_with: str | Path | None
    captures: CaptureChoice


@dataclass
class Run:
    """One analysed trace in memory (see `analyze`)."""

    results: RunResults
    health: TraceHealth
    platform_source: str  # how the platform was chosen: named, a file, the trace's GPU
    settings: Settings
    _done: list[str] = field(default_factory=lambda: [LOADED], repr=False)

    def __post_init__(self) -> None:
        done = self._done
        self.steps = Pipeline(
            self.results, None, done=done.__contains__, mark=lambda *s: done.extend(s)
        )

    # -- what the run holds ----------------------------------------------------------------

    @property
    def trace_path(self) -> Path:
        return Path(self.results.trace_path)

    @property
    def platform(self) -> str | None:
        """The GPU the rooflines are drawn for; None when no platform is known."""
        return self.results.platform.name if self.results.platform else None

    @property
    def tables(self) -> Mapping[str, pd.DataFrame]:
        """The perf report's tables by name (`unified_perf_summary`, `ops_summary`,
        `gpu_timeline`, ...), as written to `perf_report_csvs/`."""
        return dict(self.results.report.sheets)

    @property
    def timeline(self) -> pd.DataFrame | None:
        """How the window's GPU time splits: computation, communication, copies, idle."""
        return self.results.report.sheets.get("gpu_timeline")

    @property
    def metrics(self) -> Mapping[str, Metrics]:
        """Each category's metrics (runs the analyses on first use)."""
        self.compute(ANALYSED)
        return dict(self.results.metrics)

    @property
    def priorities(self) -> PriorityData:
        """Every finding on one impact scale, P1 first (runs the ranking on first use)."""
        self.compute(AGGREGATED)
        return self.steps.priorities()

    @property
    def report(self) -> str:
        """`analysis.md`: the report, composed on first use."""
        self.compute(REPORTED)
        return self.results.report_text or ""

    def plot(self) -> Figure | None:
        """The breakdown and savings plot as a matplotlib figure; None when the run has
        nothing to draw (no GPU time in any compute category)."""
        priorities, steps = self.priorities, self.steps
        compared = steps.report_comparison()
        laid = plot_layout(steps.category_data().manifest, priorities, compared)
        if isinstance(laid, str):
            return None
        title = plot_title(steps.identify(), self.results.platform, compared)
        return draw_figure(title, *laid)

    # -- steps -----------------------------------------------------------------------------

    def compute(self, until: str) -> None:
        """Run the steps up to `until` that have not run yet."""
        if until not in self._done and STEP_ORDER.index(until) > 0:
            self.steps.run(until)
            self._done.append(until)

    def save(self, folder: str | Path, *, force: bool = False) -> Path:
        """Write the run as `rooflens analyze --out folder` does (tables, workbook, metrics,
        findings, priorities, plot, report and `run.json`), staged beside `folder` and swapped
        into place. A folder holding a run of the same trace is replaced, another trace's run
        only with `force`, anything else never (RunFolderError). Returns the folder."""
        out = Path(folder)
        trace = self.trace_path.absolute()
        identity = TraceIdentity.of(trace)
        check_destination(out, identity, force=force)
        pfile = self.settings.platform_file
        record = RunRecord(
            run_id=new_run_id(),
            trace=identity,
            trace_path=str(trace),
            platform=self.platform,
            platform_file=str(Path(pfile).absolute()) if pfile else None,
            captures=self.settings.captures,
            compare_with=self._compared(),
        )
        r = self.results
        loaded = Loaded(r.model, self.health, r.platform, self.platform_source, r.report)
        with staged_output(out) as stage:
            sealed = SealedRun(stage, record)
            sealed.write_loaded(loaded, trace.name, r.comparison)
            results = RunResults.of(loaded, str(trace), str(out.absolute()), r.comparison)
            sealed.pipeline(results, label=f"the run of {trace.name}").run(REPORTED)
        return out

    def _compared(self) -> ComparedTrace | None:
        comparison, trace2 = self.results.comparison, self.settings.compare_with
        if comparison is None or trace2 is None:
            return None
        path = Path(trace2).absolute()
        platform = comparison.platform.name if comparison.platform else None
        return ComparedTrace(
            trace=TraceIdentity.of(path),
            trace_path=str(path),
            platform=platform,
            captures=self.settings.captures,
        )

    # -- how a notebook shows it -------------------------------------------------------------

    def __repr__(self) -> str:
        return f"Run({self.trace_path.name!r}, platform={self.platform!r})"

    def _repr_html_(self) -> str:
        items = self.priorities.priorities[:HTML_ITEMS]
        rows = "".join(_item_row(i) for i in items) or (
            '<tr><td colspan="4">nothing ranked</td></tr>'
        )
        head = html.escape(f"{self.trace_path.name} on {self.platform or 'no known platform'}")
        return (
            f"<div><strong>{head}</strong><table><thead><tr><th>P</th><th>kind</th>"
            f"<th>finding</th><th>mid saving (ms)</th></tr></thead><tbody>{rows}</tbody>"
            "</table></div>"
        )


def _item_row(item: PriorityItem) -> str:
    mid = "not quantifiable" if item.saving is None else f"{item.saving.mid_ms:,.3f}"
    cells = (f"P{item.p_number}", item.kind, item.title, mid)
    return "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
