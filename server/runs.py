"""The run store: one `Run` per loaded trace, with the steps done and the engine data in memory."""

from __future__ import annotations

import itertools
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from rooflens.server.paths import PathPolicy, PathRefused

MAX_IN_MEMORY = 4

LOADED = "loaded"
PREPARED = "prepared"
ANALYSED = "analysed"
AGGREGATED = "aggregated"
REPORTED = "reported"


class StepMissing(ToolError):
    """A tool was called before the step it needs; the message names the tool to call first."""


@dataclass
class Run:
    id: str
    trace_path: Path
    out_dir: Path
    platform: str | None
    steps: set[str] = field(default_factory=set)

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

    def new_run(self, trace_path: Path, platform: str | None) -> Run:
        run_id = f"run-{next(self._ids)}"
        run = Run(run_id, trace_path, self.out_dir_for(trace_path, run_id), platform)
        self.runs[run_id] = run
        return run

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
        run = self.runs.get(run_id)
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
        data = self.engine.get(run.id)
        if data is None:
            raise ToolError(
                f"the trace data of {run.id} is no longer in memory (only the last "
                f"{MAX_IN_MEMORY} runs are kept); call load_trace({str(run.trace_path)!r}) again"
            )
        self.engine.move_to_end(run.id)
        return data


@dataclass
class AppState:
    """What the lifespan yields: the path policy and the run store."""

    policy: PathPolicy
    runs: RunStore
