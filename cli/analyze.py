"""`rooflens report`, `rooflens analyze` and `rooflens platforms`.

A run never mixes with another: the destination is checked before the trace is parsed
(`check_destination`), every artifact is written into a staging folder beside `--out`, each
step seals the ledger in `run.json`, and the finished folder is swapped into place
(`staged_output`). A failed or interrupted run leaves the earlier folder whole.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import BaseModel

from rooflens.analyzers import layout
from rooflens.analyzers.categories.any_metrics import finding_count
from rooflens.analyzers.compare.compare_columns import DIFF_STATS_SHEET
from rooflens.analyzers.compare.comparison import Comparison
from rooflens.analyzers.compare.gate import GateVerdict
from rooflens.analyzers.findings.composing.model_info import UNKNOWN
from rooflens.analyzers.findings.composing.plot import Drawer, draw_png
from rooflens.analyzers.findings.composing.plot_process import PlotProcess
from rooflens.analyzers.markdown_text import plain_line
from rooflens.analyzers.perf.categories import CategoryFileError, load_table
from rooflens.analyzers.perf.platform_choice import platform_warnings
from rooflens.analyzers.perf.platforms import (
    PlatformFileError,
    UnknownPlatform,
    get_platform,
    load_platform_file,
    platform_table,
)
from rooflens.analyzers.pipeline.ledger import (
    RUN_FILE,
    RunFolderError,
    RunRecord,
    check_destination,
    new_run_id,
    occupant,
    read_record,
    record_fields,
    staged_output,
)
from rooflens.analyzers.pipeline.sealed import SealedRun
from rooflens.analyzers.pipeline.steps import (
    LOADED,
    PREPARED,
    REPORTED,
    Pipeline,
    RunResults,
)
from rooflens.analyzers.report.csv_cells import csv_cells_of
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.report.loading import Loaded, load_step, missing_gpu_work, read_trace
from rooflens.analyzers.report.write_parquet import (
    ParquetUnavailable,
    require_pyarrow,
    write_parquet_folder,
)
from rooflens.analyzers.trace.errors import TraceError

from .common import EXIT_GATE, EXIT_OK, capture_choice, fail, print_json
from .progress import Progress
from .trace_read import TraceRead

if TYPE_CHECKING:
    from .trace2 import SecondTrace

TOP_PRINTED = 5  # priorities printed after a run; the rest are in priority_data.json
BAD_INPUT = (
    TraceError,
    PlatformFileError,
    UnknownPlatform,
    CategoryFileError,
    RunFolderError,
    ParquetUnavailable,
)


class CategoryOutcome(BaseModel):
    name: str
    status: str
    findings: int
    findings_file: str


class Outcome(BaseModel):
    """What a `report`/`analyze` run wrote: the `--json` document and the text summary's data.
    Paths are relative to `out` unless absolute."""

    command: str
    out: str
    run_id: str
    trace: str
    trace_sha256: str
    replaced_run: str | None = None
    platform: str | None
    platform_source: str
    roofline_coverage_percent: float | None
    notes: list[str]
    warnings: list[str] = []  # the run's own: no platform known (how to pass one)
    tables: list[str]
    csv_cells: str = "escaped"  # text cells of the tables: escaped against formulas, or raw
    workbook: str
    parquet: list[str] = []  # `--format parquet`: the same tables as Parquet
    steps: list[str] = []
    prepared_categories: list[str] = []
    categories: list[CategoryOutcome] = []
    priorities: list[dict[str, Any]] = []
    nothing_to_rank: str | None = None  # why no item was ranked (a window too short to rank)
    model: dict[str, Any] | None = None
    plot: str | None = None
    plot_reason: str | None = None
    report: str | None = None
    page: str | None = None  # analysis.html
    annotated_trace: str | None = None  # the trace with the findings' tracks (Perfetto)
    artifacts: list[str] = []
    compare_with: dict[str, Any] | None = None  # `compare`: trace 2 and what changed
    gate: GateVerdict | None = None  # `compare --gate`: the regression verdict


def run_report(
    args: argparse.Namespace,
    *,
    until: str = LOADED,
    prefetched: TraceRead | None = None,
    second: SecondTrace | None = None,
) -> int:
    """Check, read, build in a staging folder (the pipeline's steps up to `until`), swap into
    `--out`; then print the outcome. A run that will draw the plot starts the drawing process
    first, so matplotlib's import overlaps the reading (findings/composing/plot_process.py);
    the trace is read on threads (`prefetched`: started by the CLI before the engine was imported).
    `second`: trace 2 of `rooflens compare` (compare.py)."""
    with PlotProcess() if until == REPORTED else nullcontext() as plotter:
        read = prefetched or TraceRead(Path(args.trace))
        draw = plotter.draw if plotter else draw_png
        return _run_report(args, until, draw, read, second)


def _run_report(
    args: argparse.Namespace,
    until: str,
    draw: Drawer,
    read: TraceRead,
    second: SecondTrace | None = None,
) -> int:
    progress = Progress()
    trace, out = Path(args.trace), Path(args.out)
    try:
        categories = load_table(args.categories)
        if _parquet(args):
            require_pyarrow()  # before the trace is read: say how to install the extra
        if args.platform:
            get_platform(args.platform)  # a bad name or file is reported before the trace
        if args.platform_file:
            load_platform_file(args.platform_file)
        if second is not None:
            second.check_arguments()
        with progress.step("checking the trace and the output folder"):
            if not occupant(out).empty:  # an occupied folder needs the trace's hash first
                check_destination(out, read.identity(), force=args.force)
            earlier = read_record(out) if out.is_dir() else None
        with progress.step("reading the trace", read.progress):
            model, health = read_trace(trace, captures=capture_choice(args), text=read.text)
            identity = read.identity()  # hashed meanwhile, on its own thread
        if second is not None:
            with progress.step("reading trace 2", second.read.progress):
                second.load(categories)
        missing = missing_gpu_work(model) if until != LOADED else None
        if missing:
            return fail(f"{trace.name} cannot be analysed: {missing}")
        with progress.step("building the perf report"):
            loaded = load_step(
                model,
                health=health,
                platform=args.platform,
                platform_file=args.platform_file,
                categories=categories,
            )
    except BAD_INPUT as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(str(exc))
    pfile = Path(args.platform_file).absolute() if args.platform_file else None
    name = loaded.platform.name if loaded.platform else None
    compared = second.record() if second is not None else None
    fields = record_fields(trace.absolute(), identity, name, pfile, capture_choice(args), compared)
    cells = csv_cells_of(getattr(args, "raw_csv", False))
    record = RunRecord(run_id=new_run_id(), csv_cells=cells, **fields)
    run = _Run(args, record, loaded, progress, draw, second)
    try:
        with staged_output(out) as stage:
            outcome = run.build(stage, until=until)
    except OSError as exc:
        return fail(f"cannot write the run into {out}: {exc}")
    outcome.replaced_run = earlier.run_id if earlier else None
    if args.json:
        print_json(outcome.model_dump(mode="json"))
    else:
        print_outcome(outcome, sys.stdout)
    return EXIT_GATE if outcome.gate is not None and not outcome.gate.passed else EXIT_OK


@dataclass
class _Run:
    """The steps of one CLI run inside its staging folder; each seals the ledger."""

    args: argparse.Namespace
    record: RunRecord
    loaded: Loaded
    progress: Progress
    draw: Drawer
    second: SecondTrace | None = None

    def build(self, stage: Path, *, until: str) -> Outcome:
        step, loaded = self.progress.step, self.loaded
        run = SealedRun(stage, self.record)
        comparison = None
        if self.second is not None:
            with step("comparing with trace 2 (the tree diff)"):
                comparison = self.second.compare(loaded.model, loaded.report)
        with step("writing the perf report (tables and workbook)"):
            files = run.write_loaded(loaded, Path(self.args.trace).name, comparison)
        parquet: list[Path] = []
        if _parquet(self.args):
            with step("writing the tables as Parquet"):
                parquet = _write_parquet(stage, loaded, comparison)
            run.mark()  # into the ledger
        coverage = roofline_coverage(loaded.report)
        outcome = Outcome(
            command="compare" if comparison else "report" if until == LOADED else "analyze",
            out=str(Path(self.args.out).absolute()),
            run_id=self.record.run_id,
            trace=self.record.trace_path,
            trace_sha256=self.record.trace.sha256,
            platform=self.record.platform,
            platform_source=loaded.platform_source,
            roofline_coverage_percent=None if coverage is None else round(coverage * 100, 2),
            notes=list(loaded.report.notes),
            warnings=[w.message for w in platform_warnings(loaded.health.gpu, loaded.platform)],
            tables=[p.relative_to(stage).as_posix() for p in files.csvs],
            csv_cells=self.record.csv_cells,
            workbook=files.xlsx.relative_to(stage).as_posix(),
            parquet=[p.relative_to(stage).as_posix() for p in parquet],
        )
        results = RunResults.of(loaded, str(self.args.trace), str(Path(self.args.out)), comparison)
        if self.second is not None:
            outcome.compare_with = self.second.outcome()
            threshold = getattr(self.args, "gate", None)
            if threshold is not None:
                with step("judging the regression gate"):
                    outcome.gate = self.second.gate(loaded.model, threshold)
        steps = run.pipeline(
            results,
            label=f"the run of {Path(self.args.trace).name}",
            draw=self.draw,
            annotated_trace=not getattr(self.args, "no_annotated_trace", False),
        )
        if until != LOADED:
            with _ticks(self.progress) as tick:
                steps.run(until, progress=tick)
            self._describe(steps, outcome)
        outcome.steps = list(run.record.steps)
        outcome.artifacts = [RUN_FILE, *run.record.artifacts]
        return outcome

    def _describe(self, steps: Pipeline, outcome: Outcome) -> None:
        """What the analysis found, for the summary and `--json`."""
        r = steps.results
        outcome.prepared_categories = [c.name for c in steps.category_data().manifest.categories]
        for key, metrics in r.metrics.items():
            outcome.categories.append(
                CategoryOutcome(
                    name=key,
                    status=str(metrics.status),
                    findings=finding_count(metrics),
                    findings_file=layout.findings(key),
                )
            )
        if r.priorities is not None:
            outcome.priorities = [p.model_dump(mode="json") for p in r.priorities.items]
            outcome.nothing_to_rank = r.priorities.nothing_to_rank
        if r.report_text is not None:
            identity = steps.identify()
            outcome.model = identity.model_dump(mode="json") if identity else None
            drawn = r.plot is not None and r.plot.drawn
            outcome.plot = layout.PLOT if drawn else None
            outcome.plot_reason = r.plot.reason if r.plot is not None else None
            outcome.report = layout.REPORT
            outcome.page = layout.REPORT_HTML
            outcome.annotated_trace = layout.ANNOTATED_TRACE if steps.annotated_trace else None


def _parquet(args: argparse.Namespace) -> bool:
    return getattr(args, "format", "csv") == "parquet"


def _write_parquet(stage: Path, loaded: Loaded, comparison: Comparison | None) -> list[Path]:
    """The run's tables as Parquet, each CSV folder's twin (docs/run-folder.md#parquet-tables)."""
    written = write_parquet_folder(loaded.report.sheets, stage / layout.PERF_PARQUET)
    if comparison is not None:
        trace1 = {**comparison.trace1_sheets, DIFF_STATS_SHEET: comparison.diff_stats}
        written += write_parquet_folder(trace1, stage / layout.TRACE1_PARQUET)
        written += write_parquet_folder(comparison.report.sheets, stage / layout.TRACE2_PARQUET)
    return written


@contextmanager
def _ticks(progress: Progress) -> Iterator[Callable[[str], None]]:
    """The pipeline's progress messages as CLI steps: each ends when the next one starts."""
    with ExitStack() as current:

        def tick(message: str) -> None:
            current.close()
            current.enter_context(progress.step(message))

        yield tick


def print_outcome(o: Outcome, out: TextIO) -> None:
    """The text summary of a run, with paths inside the final folder."""
    where = Path(o.out)
    out.write(f"Scored against {o.platform_source}.\n")
    if o.compare_with is not None:
        other = o.compare_with
        out.write(f"Compared with {other['trace']}, scored against {other['platform_source']}.\n")
        alike = other.get("comparability")
        if alike is not None:
            why = "; ".join(plain_line(r, 400) for r in alike["reasons"]) or "like for like"
            out.write(f"Comparability {alike['score']}/100: {why}\n")
        if other["what_changed"]:
            out.write(f"What changed: {other['what_changed']}\n")
        for warning in other.get("warnings", []):
            out.write(f"Warning: {warning}\n")
    if o.gate is not None:
        g = o.gate
        out.write(
            f"Gate       {'PASSED' if g.passed else 'FAILED'} at {g.threshold_pct:g} %: "
            f"{g.verdict}: {g.reason} (median step {g.new.median_ms:.3f} ms over "
            f"{g.new.iterations} iterations against {g.base.median_ms:.3f} ms over "
            f"{g.base.iterations}; {g.method})\n"
        )
        for c in g.contributors[:3]:
            out.write(
                f"  +{c.added_ms_per_step:.3f} ms a step  {plain_line(c.operator, 80)} "
                f"({plain_line(c.category, 30)})\n"
            )
    if o.roofline_coverage_percent is not None:
        out.write(f"Kernel time with a roofline: {o.roofline_coverage_percent:.1f} %\n")
    raw = " (text cells raw: --raw-csv)" if o.csv_cells == "raw" else ""
    out.write(
        f"Wrote {len(o.tables)} tables to {where / 'perf_report_csvs'}/{raw} and "
        f"{where / o.workbook}\n"
    )
    if o.parquet:
        folders = sorted({str(where / Path(p).parent) for p in o.parquet})
        out.write(f"Wrote {len(o.parquet)} tables as Parquet to {', '.join(folders)}\n")
    for note in o.notes:
        out.write(f"Note: {note}\n")
    for warning in o.warnings:
        out.write(f"Warning: {warning}\n")
    if PREPARED in o.steps:  # category names can come from a user's table: one line each
        names = [plain_line(n) for n in o.prepared_categories]
        out.write(
            f"Prepared {len(names)} categories in {where / 'category_data'}/: {', '.join(names)}\n"
        )
    for c in o.categories:
        found = f", {c.findings} findings" if c.findings else ""
        out.write(f"  {plain_line(c.name)}: {c.status}{found} -> {plain_line(c.findings_file)}\n")
    if REPORTED in o.steps:
        out.write("Priorities (estimated saving, mid, of the analysed window):\n")
        if not o.priorities:
            why = (
                plain_line(o.nothing_to_rank, None)
                if o.nothing_to_rank
                else ("no finding has an estimated saving")
            )
            out.write(f"  none: {why} (see {layout.REPORT})\n")
        for row in o.priorities[:TOP_PRINTED]:
            if row["saving"] is None:
                saving = f"not quantifiable: {plain_line(row['unquantified_reason'], None)}"
            else:
                saving = f"{row['saving']['mid_ms']:.3f} ms, {row['percent_mid']:.2f} %"
            out.write(f"  P{row['p_number']}. {plain_line(row['title'], None)}: {saving}\n")
        if len(o.priorities) > TOP_PRINTED:
            out.write(f"  ... {len(o.priorities) - TOP_PRINTED} more in {layout.PRIORITIES}\n")
        if o.model is None:
            out.write("Model: not identified (the trace records no operators)\n")
        else:
            m = o.model
            known = [m[k] for k in ("scale", "precision") if m[k] != UNKNOWN]
            detail = f" ({', '.join(known)})" if known else ""
            name = plain_line(m["model"]) if m["model"] != UNKNOWN else "not identified"
            out.write(f"Model: {name}{detail}\n")
        out.write(f"Plot: {where / o.plot}\n" if o.plot else f"No plot: {o.plot_reason}\n")
        out.write(f"Report: {where / (o.report or '')}\n")
        if o.page:
            out.write(f"Page: {where / o.page}\n")
        if o.annotated_trace:
            out.write(
                f"Trace with the findings (open in ui.perfetto.dev): {where / o.annotated_trace}\n"
            )
    replaced = f" (replaced run {o.replaced_run})" if o.replaced_run else ""
    out.write(f"Run {o.run_id}: {where / RUN_FILE}{replaced}\n")


def list_platforms(out: TextIO) -> int:
    rows = platform_table()
    width = max([len("name"), *(len(r.name) for r in rows)]) + 2
    out.write(f"{'name':<{width}}{'vendor':<8}{'memory GB':>10}{'HBM GB/s':>10}")
    out.write(f"{'bf16 TFLOPS':>13}{'fp8 TFLOPS':>12}  figures\n")
    for r in rows:
        bf16 = "-" if r.matrix_bf16_tflops is None else f"{r.matrix_bf16_tflops:g}"
        fp8 = "-" if r.matrix_fp8_tflops is None else f"{r.matrix_fp8_tflops:g}"
        kind = "measured" if r.measured else "peak"
        out.write(f"{r.name:<{width}}{r.vendor or '':<8}")
        out.write(f"{r.memory_gb or 0:>10g}{r.mem_bw_gbps:>10g}")
        out.write(f"{bf16:>13}{fp8:>12}  {kind}\n")
    return EXIT_OK
