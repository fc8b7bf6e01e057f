"""The analysis pipeline, declared once (docs/architecture.md#the-pipeline).

`STEPS` says what each step needs (the server maps each to its tool). A run's state is the list
of steps done, per category where a step is per category ("analysed:gemm"). `Pipeline` runs the
steps on a run's in-memory results (`RunResults`): each takes the typed results of the steps
before it, keeps its own, and hands them to the run folder to write. The CLI, the server's
step tools, `run_full_analysis` and the demo all go through it, so the order is enforced in
one place: kernel fusion before the compute categories (they flag ops a fusion candidate
covers), drafts after analyses, the report last. A step asked for too early raises
`StepMissing` naming the step to run first, in the caller's words (`call_hint`: the server
names its tool).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import layout
from ..categories import analyze_category
from ..categories.any_metrics import Metrics
from ..categories.cpu_idle import CpuIdleMetrics, analyze_cpu_idle
from ..categories.fusion_measured import analyze_measured_fusion
from ..categories.kernel_fusion import CATEGORY as KERNEL_FUSION
from ..categories.kernel_fusion import analyze_kernel_fusion
from ..categories.multi_kernel import analyze_multi_kernel
from ..categories.system_inputs import SystemInputs, Timeline
from ..categories.trace2_system import Trace2System, analyze_trace2
from ..compare.comparison import Comparison
from ..findings.composing.comparative import ReportComparison
from ..findings.composing.compose import ReportInputs, compose_report
from ..findings.composing.html_page import report_page
from ..findings.composing.model_info import (
    ModelIdentification,
    merged_identity,
    model_identification,
    op_rows,
)
from ..findings.composing.numbers import workbook_figures
from ..findings.composing.plot import (
    Drawer,
    PlotResult,
    draw_png,
    plot_title,
    render_plot,
)
from ..findings.composing.prose import ReportProse
from ..findings.composing.trace_tracks import IdleTrack, findings_pid, track_events
from ..findings.contract.contract import Findings
from ..findings.drafting.drafts import draft_findings
from ..findings.drafting.submission import (
    DropItem,
    MergeItems,
    PItemProse,
    SubmitStatus,
    submit,
)
from ..findings.drafting.system_compare import system_comparison
from ..findings.ranking.finding_events import finding_events
from ..findings.ranking.finding_ranges import located
from ..findings.ranking.priorities import PriorityData, priority_data
from ..findings.ranking.replay_price import ReplayInputs
from ..findings.ranking.run_metrics import RunMetrics
from ..layout import CPU_IDLE, MULTI_KERNEL
from ..perf.platform_choice import platform_warnings, run_warnings
from ..perf.platforms import Platform
from ..prepare.category_data import CategoryData, prepare
from ..report.build import PerfReport
from ..report.loading import Loaded, missing_gpu_work
from ..trace.health import HealthWarning, assess
from ..trace.model import TraceModel
from ..trace.time_ranges import MARKS
from .annotated_trace import Background, NotATraceDocument
from .folder import RunFolder

LOADED, PREPARED, AGGREGATED, REPORTED = "loaded", "prepared", "aggregated", "reported"
ANALYSED, DRAFTED = "analysed", "drafted"


_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    name: str
    needs: tuple[str, ...] = ()
    per_category: bool = False


STEPS = (
    Step(LOADED),
    Step(PREPARED, (LOADED,)),
    Step(ANALYSED, (PREPARED,), per_category=True),
    Step(DRAFTED, (ANALYSED,), per_category=True),
    Step(AGGREGATED, (ANALYSED,)),
    Step(REPORTED, (AGGREGATED,)),
)
BY_NAME = {s.name: s for s in STEPS}
STEP_ORDER = tuple(s.name for s in STEPS)


class StepMissing(RuntimeError):
    """A step was asked for before the step it needs; the message names the tool to call."""


class NotAnalysable(ValueError):
    """The category is listed for information only, or is not in the run."""


def state(step: str, category: str | None = None) -> str:
    return f"{step}:{category}" if category else step


@dataclass
class RunResults:
    """A run's results in memory, one field per step."""

    model: TraceModel
    report: PerfReport
    platform: Platform | None
    trace_path: str
    output_dir: str
    comparison: Comparison | None = None  # trace 2 and the tree diff, in a comparative run
    trace2_system: Trace2System | None = None  # trace 2's system analyses (comparative run)
    category_data: CategoryData | None = None
    metrics: dict[str, Metrics] = field(default_factory=dict)
    findings: dict[str, Findings] = field(default_factory=dict)
    priorities: PriorityData | None = None
    submitted_identity: ModelIdentification | None = None
    plot: PlotResult | None = None
    prose: ReportProse | None = None
    report_text: str | None = None

    @classmethod
    def of(
        cls, loaded: Loaded, trace_path: str, output_dir: str, comparison: Comparison | None = None
    ) -> RunResults:
        """A run's results once its load step is done (report/loading.py)."""
        return cls(loaded.model, loaded.report, loaded.platform, trace_path, output_dir, comparison)


@dataclass
class Pipeline:
    """The steps of one run. `done` and `mark` are the run's state (its ledger): `mark` records
    steps as done once their artifacts are written (None: write nothing, record nothing)."""

    results: RunResults
    folder: RunFolder | None
    done: Callable[[str], bool]
    mark: Callable[..., None]
    label: str = "the run"  # how messages name the run, e.g. "run run-3f9a1c2b7d4e"
    # what a message tells the caller to do to run a step (step, category): the server names
    # its tool call
    call_hint: Callable[[str, str | None], str] = field(default=lambda step, _: f"run {step}")
    draw: Drawer = draw_png  # the CLI passes PlotProcess.draw (findings/composing/plot_process.py)
    annotated_trace: bool = True  # write annotated_trace.json.gz with the report (opt-out)

    # -- order ---------------------------------------------------------------------------

    def require(self, step: str, category: str | None = None) -> None:
        """Raise StepMissing naming the earliest step still to run before `step`."""
        if self.done(state(step, category)):
            return
        for need in BY_NAME[step].needs:
            if not BY_NAME[need].per_category:
                self.require(need)
            elif category is not None:
                self.require(need, category)
        what = f"{category} of {self.label}" if category else self.label
        hint = self.call_hint(step, category)
        raise StepMissing(f"{what} has not been {step} yet; {hint} first")

    def category_data(self) -> CategoryData:
        self.require(PREPARED)
        if self.results.category_data is None:  # restored: recompute, the files are there
            self.results.category_data = self._categorise()
        return self.results.category_data

    def analysable(self) -> list[str]:
        """The keys to analyse, in the declared order: system analyses, then compute ones."""
        entries = self.category_data().manifest.categories
        names = [e.name for e in entries]
        system = [k for k in layout.SYSTEM_KEYS if k in names]
        return [*system, *(e.name for e in entries if e.tier == "compute_kernel")]

    # -- steps ---------------------------------------------------------------------------

    def prepare(self) -> CategoryData:
        self.require(LOADED)
        data = self.results.category_data = self._categorise()
        self._written(lambda folder: folder.write_category_data(data), PREPARED)
        return data

    def _categorise(self) -> CategoryData:
        r = self.results
        missing = missing_gpu_work(r.model)
        if missing:
            raise NotAnalysable(f"{self.label} cannot be analysed: {missing}")
        if r.comparison is None and self.done(PREPARED) and self.folder is not None:
            written = self.folder.read_manifest()  # restored: the scope must not change
            if written is not None and written.comparison_scope == "comparative":
                raise NotAnalysable(
                    f"{self.label} compares two traces, and trace 2 is not loaded; load the "
                    "run again with its second trace"
                )
        return prepare(
            r.model, r.report, r.platform, r.trace_path, r.output_dir, comparison=r.comparison
        )

    def analyze(self, key: str) -> Metrics:
        keys = self.analysable()
        if key not in keys:
            raise NotAnalysable(
                f"{key} is not an analysable category of {self.label}; analysable: "
                + ", ".join(keys)
            )
        if key not in layout.SYSTEM_KEYS and KERNEL_FUSION in keys:
            self.metrics_of(KERNEL_FUSION, run=True)  # declared: fusion first
        metrics = self.results.metrics[key] = self._analysis(key)
        system2 = self.trace2_system() if key == CPU_IDLE else None
        if system2 is not None and self.folder is not None:  # trace 2's run with trace 1's
            self.folder.write_trace2_system(system2)
        self._written(lambda folder: folder.write_metrics(key, metrics), state(ANALYSED, key))
        return metrics

    def trace2_system(self) -> Trace2System | None:
        """Trace 2's system analyses in a comparative run, computed once (None otherwise);
        docs/compare.md#system-analyses-of-both-traces."""
        r = self.results
        if r.comparison is None:
            return None
        if r.trace2_system is None:
            r.trace2_system = analyze_trace2(self.category_data().manifest, r.comparison)
        return r.trace2_system

    def metrics_of(self, key: str, *, run: bool = False) -> Metrics:
        """The category's metrics; `run` analyses it when it has not been."""
        if not self.done(state(ANALYSED, key)):
            if not run:
                self.require(ANALYSED, key)
            return self.analyze(key)
        if key not in self.results.metrics:  # restored: recompute in memory
            self.results.metrics[key] = self._analysis(key)
        return self.results.metrics[key]

    def _analysis(self, key: str) -> Metrics:
        data, r = self.category_data(), self.results
        if key in layout.SYSTEM_KEYS:
            inputs = SystemInputs(
                manifest=data.manifest,
                timeline=Timeline.from_sheet(r.report.sheets.get("gpu_timeline")),
                multi_kernel=data.multi_kernel,
                fusion_candidates=data.fusion_candidates,
                unified=r.report.sheets.get("unified_perf_summary"),
                platform=r.platform,
                idle=data.idle,
                kernels=data.kernels,
                copies=data.copies,
            )
            comparative = data.manifest.comparison_scope == "comparative"
            analyses = {
                CPU_IDLE: analyze_cpu_idle,
                MULTI_KERNEL: analyze_multi_kernel,
                KERNEL_FUSION: analyze_measured_fusion if comparative else analyze_kernel_fusion,
            }
            return analyses[key](inputs)
        fusion = self.results.metrics.get(KERNEL_FUSION)
        fusion_map = getattr(fusion, "high_confidence_kernel_map", None) or {}
        tables = data.tables
        scope = data.manifest.comparison_scope
        return analyze_category(
            key, tables.ops.get(key), tables.metadata.get(key), fusion_map, scope
        )

    def draft(self, key: str) -> Findings:
        findings = self._draft(key, self.metrics_of(key))
        return self._keep_findings(key, findings)

    def submit(
        self,
        key: str,
        items: Sequence[PItemProse],
        status: SubmitStatus,
        note: str | None,
        merge: Sequence[MergeItems] = (),
        drop: Sequence[DropItem] = (),
    ) -> Findings:
        metrics = self.metrics_of(key)
        scope = getattr(metrics, "comparison_scope", None)
        submitted = submit(
            self._draft(key, metrics), key, items, status=status, note=note,
            comparison_scope=scope, merge=merge, drop=drop,
        )  # fmt: skip
        return self._keep_findings(key, submitted)

    def _keep_findings(self, key: str, findings: Findings) -> Findings:
        self.results.findings[key] = findings
        self._written(lambda folder: folder.write_findings(key, findings), state(DRAFTED, key))
        return findings

    def findings_of(self, key: str) -> Findings:
        self.require(DRAFTED, key)
        if key not in self.results.findings and self.folder is not None:
            restored = self.folder.read_findings(key)
            if restored is not None:
                self.results.findings[key] = restored
        return self.results.findings.get(key) or self._draft(key, self.metrics_of(key))

    def _draft(self, key: str, metrics: Metrics) -> Findings:
        """The draft of a category; kernel fusion's also reads the fusion candidates (a
        comparative block shows each trace's kernels)."""
        system2 = self.trace2_system() if key in layout.TIMELINE_SYSTEM_KEYS else None
        if system2 is not None:  # a comparative card also states trace 2's figure
            return draft_findings(key, metrics, trace2=system2.documents()[key])
        if key != KERNEL_FUSION:
            return draft_findings(key, metrics)
        candidates = self.category_data().fusion_candidates
        return draft_findings(key, metrics, [c.as_dict() for c in candidates])

    def aggregate(self) -> PriorityData:
        self.require(PREPARED)
        if not any(map(self._has_metrics, self.analysable())):
            hint = self.call_hint(ANALYSED, None)
            raise StepMissing(f"no category of {self.label} is analysed yet; {hint} first")
        data = self.results.priorities = self._ranked()
        self._written(lambda folder: folder.write_priorities(data), AGGREGATED)
        return data

    def _ranked(self) -> PriorityData:
        metrics = {k: self.metrics_of(k) for k in self.analysable() if self._has_metrics(k)}
        replayed = ReplayInputs(self.results.model, self.results.report.unified)
        compared = self.report_comparison()
        system = compared.system if compared is not None else None
        comparable = system is not None and not system.not_comparable
        avoidable = system.avoidable_ms if comparable and system is not None else None
        return priority_data(
            self.category_data().manifest, metrics, replayed=replayed, avoidable=avoidable
        )

    def priorities(self) -> PriorityData:
        self.require(AGGREGATED)
        if self.results.priorities is None:  # restored: recompute in memory
            self.results.priorities = self._ranked()
        return self.results.priorities

    def identify(self) -> ModelIdentification | None:
        """The model behind the trace (what a model submitted wins); None without operators."""
        self.require(LOADED)
        rows = op_rows(self.results.report.sheets.get("unified_perf_summary"))
        if rows is None:
            return None
        submitted = self.results.submitted_identity
        if submitted is None and self.folder is not None:
            submitted = self.results.submitted_identity = self.folder.read_submitted_identity()
        identity = merged_identity(model_identification(rows), submitted)
        if self.folder is not None:
            self.folder.write_identity(rows, identity)
        return identity

    def submit_identity(self, info: ModelIdentification) -> ModelIdentification:
        self.require(LOADED)
        self.results.submitted_identity = info
        self._written(lambda folder: folder.write_submitted_identity(info))
        return self.identify() or info

    def plot(self, title: str | None = None) -> PlotResult:
        priorities = self.priorities()
        compared = self.report_comparison()
        title = title or plot_title(self.identify(), self.results.platform, compared)
        manifest = self.category_data().manifest
        result = self.results.plot = render_plot(manifest, priorities, title, self.draw, compared)
        self._written(lambda folder: folder.write_plot(result))
        return result

    def has_plot(self) -> bool:
        if self.results.plot is not None:
            return self.results.plot.drawn
        return self.folder is not None and self.folder.has(layout.PLOT)

    def compose(self, prose: ReportProse | None = None) -> str:
        """The report; the plot is drawn only when none was (a model's title stays). The
        annotated trace is made and written on a thread meanwhile (it reads the trace model
        and the priorities, which nothing changes by then)."""
        priorities = self.priorities()
        annotating = self._annotating()
        try:
            return self._compose(priorities, prose, annotating)
        finally:
            if annotating is not None:
                annotating.wait()

    def _annotating(self) -> Background | None:
        folder = self.folder
        if folder is None or not self.annotated_trace:
            return None
        trace, tracks = Path(self.results.trace_path), self._track_sources()

        def write() -> None:
            """The annotated trace is a companion of the report: a trace file that cannot be
            read again as it was (moved, changed, a document of another shape) costs only
            that file, said in the log."""
            try:
                folder.write_annotated_trace(trace, tracks())
            except (NotATraceDocument, zlib.error, EOFError, OSError) as exc:
                _log.warning("no %s for %s: %s", layout.ANNOTATED_TRACE, trace.name, exc)

        return Background(write)

    def _compose(
        self, priorities: PriorityData, prose: ReportProse | None, annotating: Background | None
    ) -> str:
        identity = self.identify()
        if not self.has_plot():
            self.plot()
        if prose is not None:
            self.results.prose = prose
            self._written(lambda folder: folder.write_prose(prose))
        elif self.results.prose is None and self.folder is not None:
            self.results.prose = self.folder.read_prose()
        data = self.category_data()
        drafted = [k for k in self.analysable() if self.done(state(DRAFTED, k))]
        inputs = ReportInputs(
            manifest=data.manifest,
            metadata=data.tables.metadata,
            metrics={k: self.metrics_of(k) for k in self.analysable() if self._has_metrics(k)},
            findings={k: self.findings_of(k) for k in drafted},
            priorities=priorities,
            identity=identity,
            has_plot=self.has_plot(),
            prose=self.results.prose,
            platform=self.results.platform,
            health=tuple(self.warnings() + self.trace2_warnings()),
            comparison=self.report_comparison(),
            workbook=workbook_figures(self.results.report.sheets.get("ops_summary_by_category")),
        )
        text = self.results.report_text = compose_report(inputs)

        def write(folder: RunFolder) -> None:
            """The report, the page, and the annotated trace finished before the seal."""
            folder.write_analysis_report(text)
            plot = self.results.plot
            png = plot.png_bytes if plot is not None else folder.read_plot()
            folder.write_report_page(report_page(inputs, png))
            if annotating is not None:
                annotating.wait()

        self._written(write, REPORTED)
        return text

    def trace_tracks(self) -> list[dict[str, Any]]:
        """The findings as trace events, in a process of their own (composing/trace_tracks.py):
        each with up to MARKS ranges, more than the run's files keep."""
        return self._track_sources()()

    def _track_sources(self) -> Callable[[], list[dict[str, Any]]]:
        """What the tracks are made from, gathered now; the making, for later (a thread)."""
        r = self.results
        idle = r.metrics.get(CPU_IDLE)
        host = idle.host_side if isinstance(idle, CpuIdleMetrics) else None
        breakdown = self.category_data().idle
        parts = breakdown.parts if breakdown is not None and host is not None else None
        run = RunMetrics.of(dict(r.metrics))
        model, unified, ranked = r.model, r.report.unified, list(self.priorities().priorities)

        def make() -> list[dict[str, Any]]:
            items = located(
                ranked,
                run,
                model,
                lambda c: finding_events(c, run, model, unified),
                keep=MARKS,
                idle_causes=None if parts is None else [p.ranges for p in parts],
            )
            causes = None
            if parts is not None:
                causes = [IdleTrack(p.cause, p.label, p.idle_ms, p.ranges)
                          for p in parts if p.ranges]  # fmt: skip
            pid = findings_pid(model.events["pid"].unique())
            return track_events(pid, items, host, causes)

        return make

    def report_comparison(self) -> ReportComparison | None:
        """Trace 2 as the report and the plot show it (None in a standalone run)."""
        compared = ReportComparison.of(self.category_data().manifest, self.results.comparison)
        system2 = self.trace2_system() if compared is not None else None
        if system2 is None:
            return compared
        mine = {k: self.metrics_of(k) for k in layout.TIMELINE_SYSTEM_KEYS if self._has_metrics(k)}
        return replace(compared, system=system_comparison(mine, system2.documents()))

    def warnings(self) -> list[HealthWarning]:
        """The trace's health warnings, then the run's own (no platform known)."""
        return run_warnings(assess(self.results.model), self.results.platform)

    def trace2_warnings(self) -> list[HealthWarning]:
        """Trace 2's health warnings in a comparative run, each saying it is trace 2's."""
        compared = self.results.comparison
        if compared is None:
            return []
        found = run_warnings(compared.health, compared.platform)
        return [w.model_copy(update={"message": f"Trace 2: {w.message}"}) for w in found]

    def own_warnings(self) -> list[HealthWarning]:
        """The run's own warnings: one when no platform is known, saying how to pass one."""
        if self.results.platform is not None:
            return []
        return platform_warnings(assess(self.results.model).gpu, None)

    def _has_metrics(self, key: str) -> bool:
        return self.done(state(ANALYSED, key))

    def _written(self, write: Callable[[RunFolder], object], *steps: str) -> None:
        """Hand a step's result to the folder (when the run has one), then record `steps`."""
        if self.folder is not None:
            write(self.folder)
        self.mark(*steps)

    # -- the whole run -------------------------------------------------------------------

    def run(
        self,
        until: str = REPORTED,
        progress: Callable[[str], None] = lambda _: None,
        prose: ReportProse | None = None,
    ) -> None:
        """Every step after loading, in the declared order, up to `until`. Steps already done
        are kept: a second whole run neither recomputes the category data nor replaces the
        findings a model submitted."""
        stop = STEP_ORDER.index(until)
        if stop >= STEP_ORDER.index(PREPARED) and not self.done(PREPARED):
            progress("preparing the category data")
            self.prepare()
        if stop >= STEP_ORDER.index(ANALYSED):
            for key in self.analysable():
                progress(f"analysing {key}")
                if not self._has_metrics(key):
                    self.analyze(key)
                if stop >= STEP_ORDER.index(DRAFTED) and not self.done(state(DRAFTED, key)):
                    self.draft(key)
        if stop >= STEP_ORDER.index(AGGREGATED):
            progress("ranking the priorities")
            self.aggregate()
        if stop >= STEP_ORDER.index(REPORTED):
            progress("identifying the model, drawing the plot, composing the report")
            self.compose(prose)
