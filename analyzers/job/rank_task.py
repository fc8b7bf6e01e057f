"""What one rank's task does on a worker: read its own trace, optionally run the rank's normal
pipeline into its own run folder, and hand back only the small typed summary.

A trace never travels: the task gets a path and returns a `RankDone` (a few kB: the summary,
the run's id and the trace's identity) or a `RankFailed` saying why. Bad input and bugs alike
become a `RankFailed`, so one broken rank never stops the job. Imports no dask: the task is a
plain function, run by `fanout.py` on a worker or called directly.
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

import hashlib
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..perf.platforms import PlatformFileError, UnknownPlatform
from ..pipeline.ledger import RunRecord, TraceIdentity, new_run_id
from ..pipeline.sealed import SealedRun
from ..pipeline.steps import LOADED, RunResults
from ..report.loading import load_step, missing_gpu_work, read_trace
from ..trace.errors import TraceError
from ..trace.health import TraceHealth
from ..trace.model import TraceModel
from ..trace.open_trace import AUTO
from .summary import RankSummary, summarise_rank

NO_RUN = "none"  # `until` for summaries only: no per-rank run folder
BAD_TRACE = "unreadable trace"
RANK_MISMATCH = "rank mismatch"
BUG = "internal error"
WORKER_LOST = "worker lost"


@dataclass(frozen=True, slots=True)
class RankTask:
    """One rank's work order: small, picklable, the same on a laptop and on a cluster."""

    path: str
    rank: int
    platform: str | None = None  # a catalogue name; None: the one the trace suggests
    run_folder: str | None = None  # where the rank's own run goes (None: no run)
    until: str = LOADED  # the last pipeline step of that run
    owner: str | None = None  # the MCP session the run belongs to (run.json's owner)


@dataclass(frozen=True)
class RankDone:
    """A rank analysed: its summary and, when asked for, its run folder's id."""

    rank: int
    path: str
    summary: RankSummary
    identity: TraceIdentity
    run_id: str | None
    run_note: str | None  # why the rank's run stopped early (no GPU work), else None
    seconds: float
    pid: int  # the process that ran the task (a worker's, on a cluster)
    peak_rss_mb: float  # that process's peak resident memory so far


@dataclass(frozen=True, slots=True)
class RankFailed:
    """A rank that could not be analysed, and why, in one line a person can act on."""

    rank: int
    path: str
    kind: str  # BAD_TRACE, RANK_MISMATCH, BUG or WORKER_LOST
    reason: str


RankOutcome = RankDone | RankFailed


def run_rank(task: RankTask) -> RankOutcome:
    """The whole per-rank step; never raises for a rank's own problem."""
    start = time.perf_counter()
    try:
        digest = hashlib.sha256()
        model, health = read_trace(task.path, captures=AUTO, on_read=digest.update)
        identity = _identity(Path(task.path), digest.hexdigest())
        if (recorded := _recorded_rank(model)) not in (None, task.rank):
            reason = (
                f"{Path(task.path).name} records rank {recorded} in its distributedInfo, but its "
                f"file name placed it as rank {task.rank}; fix --rank-regex or the file name"
            )
            return RankFailed(task.rank, task.path, RANK_MISMATCH, reason)
        summary = summarise_rank(model, task.rank, task.platform)
        run_id, note = None, None
        if task.run_folder is not None and task.until != NO_RUN:
            run_id, note = rank_run(model, health, identity, task)
    except (TraceError, UnknownPlatform, PlatformFileError) as exc:
        return RankFailed(task.rank, task.path, BAD_TRACE, str(exc))
    except Exception as exc:  # a bug on one rank must not stop the other ranks
        return RankFailed(task.rank, task.path, BUG, f"{type(exc).__name__}: {exc}")
    return RankDone(
        rank=task.rank,
        path=task.path,
        summary=summary,
        identity=identity,
        run_id=run_id,
        run_note=note,
        seconds=time.perf_counter() - start,
        pid=os.getpid(),
        peak_rss_mb=peak_rss_mb(),
    )


def _recorded_rank(model: TraceModel) -> int | None:
    """The rank the whole trace records (job inputs read only its header, which may lack it)."""
    info = model.trace.meta.distributed
    return None if info is None or info.rank is None else int(info.rank)


def _identity(path: Path, sha256: str) -> TraceIdentity:
    stat = path.stat()
    return TraceIdentity(
        name=path.name, size=stat.st_size, mtime_ns=stat.st_mtime_ns, sha256=sha256
    )


def rank_run(
    model: TraceModel, health: TraceHealth, identity: TraceIdentity, task: RankTask
) -> tuple[str, str | None]:
    """The rank's normal run (perf report, then the pipeline up to `task.until`) written into
    `task.run_folder`, sealed step by step like any run; its id, and why it stopped early."""
    out = Path(task.run_folder or "")
    out.mkdir(parents=True, exist_ok=True)
    loaded = load_step(model, health=health, platform=task.platform)
    record = RunRecord(
        run_id=new_run_id(),
        trace=identity,
        trace_path=str(Path(task.path).absolute()),
        platform=loaded.platform.name if loaded.platform else None,
        captures=AUTO,
        owner=task.owner,
    )
    run = SealedRun(out, record)
    run.write_loaded(loaded, Path(task.path).name)
    missing = missing_gpu_work(model)
    if task.until == LOADED or missing:
        return record.run_id, missing
    results = RunResults.of(loaded, task.path, str(out))
    run.pipeline(results, label=f"the run of rank {task.rank}").run(task.until)
    return record.run_id, None


def peak_rss_mb() -> float:
    """This process's peak resident set size, MiB: VmHWM on Linux (ru_maxrss there carries
    over exec from the process that spawned the worker), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024
