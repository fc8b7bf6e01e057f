"""The run store: one `Run` per loaded trace, with the steps done and the engine data in memory."""

from __future__ import annotations

import itertools
import json
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from rooflens.analyzers.perf.platforms import UnknownPlatform, get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.write_csv import atomic_write_bytes
from rooflens.analyzers.trace.open_trace import open_trace
from rooflens.server.paths import PathPolicy, PathRefused

MAX_IN_MEMORY = 4

LOADED = "loaded"
PREPARED = "prepared"
ANALYSED = "analysed"
AGGREGATED = "aggregated"
REPORTED = "reported"


class StepMissing(ToolError):
    """A tool was called before the step it needs; the message names the tool to call first."""


RUN_FILE = "run.json"


@dataclass
class Run:
    id: str
    trace_path: Path
    out_dir: Path
    platform: str | None
    captures: str | None = "auto"  # open_trace's choice: "auto", a capture folder, or None
    steps: set[str] = field(default_factory=set)

    def mark(self, step: str) -> None:
        """Record a finished step, in memory and in the run folder (survives a restart)."""
        self.steps.add(step)
        self.save()

    def save(self) -> None:
        record = {
            "id": self.id,
            "trace_path": str(self.trace_path),
            "platform": self.platform,
            "captures": self.captures,
            "steps": sorted(self.steps),
        }
        text = json.dumps(record, indent=2) + "\n"
        atomic_write_bytes(self.out_dir / RUN_FILE, text.encode("utf-8"))

    @classmethod
    def restore(cls, folder: Path) -> Run:
        record = json.loads((folder / RUN_FILE).read_text())
        return cls(
            id=record["id"],
            trace_path=Path(record["trace_path"]),
            out_dir=folder,
            platform=record.get("platform"),
            captures=record.get("captures", "auto"),
            steps=set(record.get("steps", [])),
        )

    def require(self, step: str, next_tool: str) -> None:
        if step not in self.steps:
            raise StepMissing(
                f"run {self.id} has not been {step} yet; call {next_tool}(run_id={self.id!r}) first"
            )


@dataclass
class EngineData:
    model: Any  # TraceModel
    report: Any  # PerfReport
    platform: Any  # Platform | None


class RunStore:
    """Runs by id; the engine data of at most `MAX_IN_MEMORY` runs, oldest evicted first."""

    def __init__(self, policy: PathPolicy) -> None:
        self.policy = policy
        self.runs: dict[str, Run] = {}
        self.engine: OrderedDict[str, EngineData] = OrderedDict()
        self._ids = itertools.count(1)

    def new_run(self, trace_path: Path, platform: str | None, captures: str | None) -> Run:
        """A run with the next id whose folder is free (earlier sessions' runs are kept)."""
        while True:
            run_id = f"run-{next(self._ids)}"
            out_dir = self.out_dir_for(trace_path, run_id)
            if run_id not in self.runs and not (out_dir / RUN_FILE).exists():
                break
        run = Run(run_id, trace_path, out_dir, platform, captures)
        self.runs[run_id] = run
        return run

    def find_saved(self, run_id: str) -> Run | None:
        """A run of an earlier session, from its `run.json` inside the allowed directories."""
        patterns = (f"rooflens_runs/{run_id}/{RUN_FILE}", f"**/analysis_output/{run_id}/{RUN_FILE}")
        found = [p for root in self.policy.allowed for pat in patterns for p in root.glob(pat)]
        if not found:
            return None
        newest = max(found, key=lambda p: p.stat().st_mtime)
        return Run.restore(newest.parent)

    def out_dir_for(self, trace_path: Path, run_id: str) -> Path:
        """`<trace folder>/analysis_output/<id>` if allowed and writable; else under the first
        allowed directory's `rooflens_runs/<id>`."""
        preferred = trace_path.parent / "analysis_output" / run_id
        try:
            resolved = self.policy.resolve(str(preferred), must_exist=False, for_write=True)
            if os.access(trace_path.parent, os.W_OK):
                return resolved
        except PathRefused:
            pass
        return self.policy.allowed[0] / "rooflens_runs" / run_id

    def get(self, run_id: str) -> Run:
        run = self.runs.get(run_id) or self.find_saved(run_id)
        if run is not None:
            self.runs[run_id] = run
        if run is None:
            known = ", ".join(self.runs) or "none yet"
            raise ToolError(
                f"unknown run id {run_id!r} (known runs: {known}); "
                "call load_trace(path) to start a run"
            )
        return run

    def keep(self, run_id: str, data: EngineData) -> None:
        self.engine[run_id] = data
        self.engine.move_to_end(run_id)
        while len(self.engine) > MAX_IN_MEMORY:
            self.engine.popitem(last=False)

    def data(self, run: Run) -> EngineData:
        """The run's engine data; rebuilt from its trace when evicted or after a restart."""
        data = self.engine.get(run.id)
        if data is None:
            data = self.reload(run)
            self.keep(run.id, data)
        self.engine.move_to_end(run.id)
        return data

    def reload(self, run: Run) -> EngineData:
        """Decode the run's trace again and rebuild its report (deterministic: same numbers)."""
        if not run.trace_path.is_file():
            raise ToolError(
                f"the trace of {run.id} ({run.trace_path}) is gone; call load_trace to start a "
                "new run"
            )
        try:
            platform = get_platform(run.platform) if run.platform else None
        except UnknownPlatform:
            raise ToolError(
                f"{run.id} was scored against a platform file; call load_trace with it again"
            ) from None
        model = open_trace(run.trace_path, captures=run.captures, allow=self.policy.contains)
        return EngineData(model, build_report(model, platform), platform)


@dataclass
class AppState:
    """What the lifespan yields: the path policy and the run store."""

    policy: PathPolicy
    runs: RunStore
