"""Starting a run from a trace, or finding the caller's earlier run of the same inputs;
rebuilding a run's results after eviction or a restart; the pipeline of a run. Plain
functions: the tools call them on a worker thread."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflens.analyzers.compare.comparison import Comparison, load_comparison
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.ledger import ComparedTrace, TraceIdentity, record_fields
from rooflens.analyzers.pipeline.steps import (
    LOADED,
    NotAnalysable,
    Pipeline,
    RunResults,
)
from rooflens.analyzers.report.loading import Loaded, load_step, missing_gpu_work, read_trace
from rooflens.analyzers.trace.health import TraceHealth, assess
from rooflens.analyzers.trace.open_trace import AUTO
from rooflens.analyzers.trace.read import require_regular_file

from .owners import Owner
from .paths import PathRefused
from .runs import Run
from .state import AppState
from .step_tools import step_call

EARLIER_PLATFORM = "the earlier run's platform"


class LoadArguments(ValueError):
    """Arguments of a load that do not fit together; the message says what to pass."""


@dataclass(frozen=True)
class LoadRequest:
    """What load_trace and run_full_analysis were asked for (paths as the caller gave them)."""

    path: str
    platform: str | None = None
    platform_file: str | None = None
    capture_folder: str | None = None
    output_dir: str | None = None
    fresh: bool = False
    whole: bool = False  # run_full_analysis: refuse what cannot be analysed before writing
    compare_with: str | None = None  # trace 2 of a comparative run
    platform2: str | None = None
    capture_folder2: str | None = None


@dataclass
class LoadedRun:
    """A server run after load_trace: new (its load step done) or the caller's earlier one."""

    run: Run
    results: RunResults
    health: TraceHealth
    reused: bool
    platform_source: str


def load_run(st: AppState, req: LoadRequest, owner: Owner) -> LoadedRun:
    """The caller's earlier run of the same trace and options, else a new run whose perf
    report is written into a new folder (under `output_dir`, else the workspace)."""
    if req.platform and req.platform_file:
        raise PathRefused("pass either platform or platform_file, not both")
    trace = require_regular_file(st.policy.resolve(req.path, must_exist=True))
    pfile = st.policy.resolve(req.platform_file, must_exist=True) if req.platform_file else None
    captures = AUTO
    if req.capture_folder:
        captures = str(st.policy.resolve(req.capture_folder, must_exist=True))
    if req.platform:
        get_platform(req.platform)  # an unknown name fails before the trace is read
    out_parent = (
        st.policy.resolve(req.output_dir, must_exist=False, for_write=True)
        if req.output_dir
        else st.runs.workspace_dir()
    )
    compared = _trace2(st, req)
    options = {"platform": req.platform, "platform_file": _str(pfile), "captures": captures}
    if compared is not None:
        options["compare_with"] = (compared.trace_path, compared.platform, compared.captures)
    if not req.fresh and (held := st.runs.held(trace, options, owner)) is not None:
        run, results = held  # in memory and the file unchanged: no hashing, no reading
        return LoadedRun(run, results, assess(results.model), True, EARLIER_PLATFORM)
    fields = record_fields(trace, TraceIdentity.of(trace), req.platform, pfile, captures, compared)
    if not req.fresh and (earlier := st.runs.find_same(fields, owner)) is not None:
        results = run_results(st, earlier)
        return LoadedRun(earlier, results, assess(results.model), True, EARLIER_PLATFORM)
    model, health = read_trace(trace, captures=captures, allow=st.policy.contains)
    if req.whole and (missing := missing_gpu_work(model)):
        raise NotAnalysable(f"{trace.name} cannot be analysed: {missing}")
    loaded = load_step(model, health=health, platform=req.platform, platform_file=pfile)
    comparison = None if compared is None else _compare(st, loaded, compared)
    fields["platform"] = loaded.platform.name if loaded.platform else None
    run = st.runs.create(out_parent, fields, owner, requested=req.platform)
    folder = RunFolder(st.policy.folder_without_links(run.folder))
    folder.write_perf_report(loaded.report, trace.name, health.gpu.model)
    if comparison is not None:
        folder.write_comparison(comparison)
    run.mark(LOADED)
    results = RunResults.of(loaded, str(trace), str(run.folder), comparison)
    st.runs.keep(run.run_id, results, options)
    return LoadedRun(run, results, health, False, loaded.platform_source)


def _trace2(st: AppState, req: LoadRequest) -> ComparedTrace | None:
    """Trace 2 of a comparative load, checked like trace 1 (inside the allowed directories, a
    regular file, a known platform) before anything is read; None for a standalone load."""
    if req.compare_with is None:
        if req.platform2 or req.capture_folder2:
            raise LoadArguments(
                "platform2 and capture_folder2 describe the trace to compare with; pass "
                "compare_with (the reference trace) too, or leave them out"
            )
        return None
    trace2 = require_regular_file(st.policy.resolve(req.compare_with, must_exist=True))
    captures2 = AUTO
    if req.capture_folder2:
        captures2 = str(st.policy.resolve(req.capture_folder2, must_exist=True))
    if req.platform2:
        get_platform(req.platform2)  # an unknown name fails before either trace is read
    return ComparedTrace(
        trace=TraceIdentity.of(trace2),
        trace_path=str(trace2),
        platform=req.platform2,
        captures=captures2,
    )


def _compare(st: AppState, loaded: Loaded, compared: ComparedTrace) -> Comparison:
    """Read trace 2 and set it against trace 1 (docs/compare.md#a-comparative-run)."""
    return load_comparison(
        loaded.model,
        loaded.report,
        Path(compared.trace_path),
        platform=compared.platform,
        captures=compared.captures or AUTO,
        allow=st.policy.contains,
    )


def _str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def run_results(st: AppState, run: Run) -> RunResults:
    """The run's results; rebuilt from its trace (re-checked) after eviction or restart."""
    results = st.runs.results.get(run.run_id)
    if results is None:
        results = _rebuild(st, run)
    st.runs.keep(run.run_id, results)
    return results


def pipeline(st: AppState, run: Run) -> Pipeline:
    """The run's pipeline: its results in memory, its folder, its ledger."""
    return Pipeline(
        results=run_results(st, run),
        folder=RunFolder(
            st.policy.folder_without_links(run.folder), csv_cells=run.record.csv_cells
        ),
        done=run.done,
        mark=run.mark,
        label=f"run {run.id}",
        call_hint=lambda step, category: step_call(step, run.id, category),
    )


def _rebuild(st: AppState, run: Run) -> RunResults:
    record = run.record
    trace = require_regular_file(st.policy.recheck(Path(record.trace_path), "trace"))
    if not TraceIdentity.of(trace).same_content(record.trace):
        raise PathRefused(
            f"the trace of {run.id} ({trace.name}) has changed since the run started; call "
            "load_trace again to analyse the new content"
        )
    pfile = None
    if record.platform_file:
        pfile = st.policy.recheck(Path(record.platform_file), "platform")
    captures = record.captures
    if captures not in (None, AUTO):
        captures = str(st.policy.recheck(Path(captures), "capture folder"))
    model, health = read_trace(trace, captures=captures, allow=st.policy.contains)
    loaded = load_step(model, health=health, platform=record.platform, platform_file=pfile)
    comparison = None
    if (compared := record.compare_with) is not None:
        trace2 = require_regular_file(st.policy.recheck(Path(compared.trace_path), "trace 2"))
        if not TraceIdentity.of(trace2).same_content(compared.trace):
            raise PathRefused(
                f"trace 2 of {run.id} ({trace2.name}) has changed since the run started; call "
                "load_trace again to compare with the new content"
            )
        if compared.captures not in (None, AUTO):
            folder2 = st.policy.recheck(Path(compared.captures), "capture folder of trace 2")
            compared = compared.model_copy(update={"captures": str(folder2)})
        comparison = _compare(st, loaded, compared)
    return RunResults.of(loaded, record.trace_path, str(run.folder), comparison)
