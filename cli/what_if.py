"""`rooflens what-if TARGET... [--change SPEC]...`: the trace replayed, its critical path, and
the step predicted after each change (docs/what-if.md). TARGET is a run folder (its trace is
read again from `run.json`) or a trace file; several are the ranks of one job, replayed
together (docs/what-if.md#jobs)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from rooflens.analyzers.job.collectives import NoRank, rank_of
from rooflens.analyzers.job.joint_replay import JobWhatIf, job_what_if
from rooflens.analyzers.markdown_text import plain_line
from rooflens.analyzers.pipeline.ledger import RunFolderError, read_record
from rooflens.analyzers.replay.graph import CannotReplay
from rooflens.analyzers.replay.what_if import ChangeError, PathItem, WhatIf, what_if
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.trace.errors import TraceError

from .common import EXIT_OK, fail, print_json


def run_what_if(targets: list[str], changes: list[str], *, as_json: bool) -> int:
    result: WhatIf | JobWhatIf
    try:
        if len(targets) == 1:
            trace, captures = _trace_of(Path(targets[0]))
            model, _ = read_trace(trace, captures=captures)
            result = what_if(model, changes)
        else:
            result = job_what_if(_ranks(targets), changes)
    except (TraceError, RunFolderError, CannotReplay, ChangeError, NoRank) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot read {exc.filename or ' '.join(targets)}: {exc.strerror or exc}")
    if as_json:
        print_json(result.model_dump(mode="json"))
    elif isinstance(result, JobWhatIf):
        print_job_what_if(result, sys.stdout)
    else:
        print_what_if(result, sys.stdout)
    return EXIT_OK


def _ranks(targets: list[str]):
    """Each target's model by the rank its trace records (distributedInfo)."""
    models = {}
    for target in targets:
        trace, captures = _trace_of(Path(target))
        model, _ = read_trace(trace, captures=captures)
        rank = rank_of(model.trace)
        if rank in models:
            raise ChangeError(f"{target}: a second trace of rank {rank}")
        models[rank] = model
    return models


def print_job_what_if(r: JobWhatIf, out: TextIO) -> None:
    out.write(
        f"Job        {len(r.ranks)} ranks replayed together over {r.matched_collectives} "
        f"matched collectives; {r.time_per_step_ms:.3f} ms per step (the slowest rank)\n"
    )
    for f in r.ranks:
        out.write(
            f"  rank {f.rank:<4} measured {f.measured_step_ms:.3f} ms, replayed "
            f"{f.replayed_step_ms:.3f} ms ({f.replay_error_pct:.2f} %), clock "
            f"{f.clock_offset_us:+.1f} µs, last to arrive at {f.last_arrivals} of "
            f"{r.matched_collectives} collectives\n"
        )
    for p in [*r.changes, *([r.combined] if r.combined else [])]:
        last = ", ".join(f"rank {k} ({v})" for k, v in p.last_arrivals.items()) or "none"
        out.write(
            f"Change     {plain_line(p.spec)}: {p.events} touched; step "
            f"{p.predicted_step_ms:.3f} ms, saving {p.saving_ms:.3f} ms; last to arrive: {last}\n"
        )


def _trace_of(target: Path) -> tuple[Path, str]:
    if target.is_dir():
        record = read_record(target)
        if record is None:
            raise RunFolderError(f"{target} holds no run (no run.json): pass a run or a trace")
        return Path(record.trace_path), record.captures or "auto"
    return target, "auto"


def print_what_if(r: WhatIf, out: TextIO) -> None:
    out.write(
        f"Step       measured {r.measured_step_ms:.3f} ms, replayed {r.replayed_step_ms:.3f} ms "
        f"(identity replay error {r.replay_error_pct:.2f} % over {len(r.iterations)} "
        "iterations)\n"
    )
    steps = f"{r.steady_steps} steady steps" if r.steady_steps else "the window"
    out.write(
        f"Per step   {r.time_per_step_ms:.3f} ms over {steps} (host spans and the GPU work "
        "they launched); predictions below are in it\n"
    )
    out.write("Critical path (median iteration):\n")
    _path(r.critical_path, out)
    for p in [*r.changes, *([r.combined] if r.combined else [])]:
        out.write(
            f"Change     {plain_line(p.spec)}: {p.events} touched; "
            f"step {p.predicted_step_ms:.3f} ms, saving {p.saving_ms:.3f} ms\n"
        )
        out.write("  then critical:\n")
        _path(p.critical_next, out, indent="    ")
    held = [a for a in r.assumptions if a.events]
    for a in held:
        out.write(f"Assumed    {a.rule}: {a.events} events, {a.ms:.3f} ms\n")


def _path(items: list[PathItem], out: TextIO, indent: str = "  ") -> None:
    for item in items:
        name = plain_line(item.name, 90)  # a trace's name is data: one visible line
        out.write(f"{indent}{item.kind:<13}{item.ms:>12.3f} ms {100 * item.share:6.1f} %  {name}\n")
