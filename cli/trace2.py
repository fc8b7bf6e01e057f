"""Trace 2 of `rooflens compare`: its arguments checked before either trace is parsed, read on
threads like trace 1 and refused before anything is written when it cannot be compared, then
set against trace 1 once trace 1's perf report exists (docs/compare.md#a-comparative-run).
`analyze.py` runs the comparison as part of `analyze`'s run; `compare.py` starts it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rooflens.analyzers.compare.comparison import SAME_TRACE, Comparison, compare, read_trace2
from rooflens.analyzers.compare.gate import GateVerdict, gate_verdict
from rooflens.analyzers.compare.what_changed_md import headline
from rooflens.analyzers.perf.categories import CategoryTable
from rooflens.analyzers.perf.platforms import (
    Platform,
    PlatformFileError,
    UnknownPlatform,
    get_platform,
    load_platform_file,
)
from rooflens.analyzers.pipeline.ledger import ComparedTrace
from rooflens.analyzers.report.build import PerfReport
from rooflens.analyzers.report.loading import Loaded, load_step
from rooflens.analyzers.trace.model import TraceModel
from rooflens.analyzers.trace.open_trace import AUTO

from .trace_read import TraceRead


@dataclass
class SecondTrace:
    """Trace 2 of a `compare` run, in the order the run needs it."""

    args: argparse.Namespace
    read: TraceRead
    loaded: Loaded | None = None  # trace 2 read and reported, once load() ran
    comparison: Comparison | None = field(default=None, repr=False)

    @property
    def captures(self) -> str | None:
        if self.args.no_captures:
            return None
        return self.args.capture_folder2 or AUTO

    def check_arguments(self) -> None:
        """A bad --platform2 name or file fails before any trace is parsed."""
        try:
            if self.args.platform2:
                get_platform(self.args.platform2)
            if self.args.platform2_file:
                load_platform_file(self.args.platform2_file)
        except (UnknownPlatform, PlatformFileError) as exc:
            raise type(exc)(f"trace 2's platform: {exc}") from None

    def load(self, categories: CategoryTable | None = None) -> None:
        """Read trace 2, choose its platform and build its perf report (raises TraceError
        naming trace 2)."""
        model, health = read_trace2(self.read.trace, captures=self.captures, text=self.read.text)
        self.loaded = load_step(
            model,
            health=health,
            platform=self.args.platform2,
            platform_file=self.args.platform2_file,
            categories=categories,
        )

    @property
    def platform(self) -> Platform | None:
        return self.loaded.platform if self.loaded else None

    @property
    def source(self) -> str:
        return self.loaded.platform_source if self.loaded else ""

    def record(self) -> ComparedTrace:
        pfile = self.args.platform2_file
        return ComparedTrace(
            trace=self.read.identity(),
            trace_path=str(self.read.trace.absolute()),
            platform=self.platform.name if self.platform else None,
            platform_file=str(Path(pfile).absolute()) if pfile else None,
            captures=self.captures,
        )

    def compare(self, model1: TraceModel, report1: PerfReport) -> Comparison:
        assert self.loaded is not None, "load() first"
        trace = str(self.read.trace)
        self.comparison = compare(model1, report1, self.loaded, trace_path=trace)
        return self.comparison

    def gate(self, model1: TraceModel, threshold_pct: float) -> GateVerdict:
        """The regression verdict on trace 1 (the new run) against trace 2 (the baseline)."""
        assert self.loaded is not None, "load() first"
        names = (Path(self.args.trace).name, self.read.trace.name)
        alike = self.comparison.comparability if self.comparison is not None else None
        return gate_verdict(model1, self.loaded.model, threshold_pct, names=names, alike=alike)

    def outcome(self) -> dict[str, Any]:
        """What `--json` and the summary say about trace 2 and the comparison."""
        record = self.record()
        found = self.comparison
        return {
            "trace": record.trace_path,
            "trace_sha256": record.trace.sha256,
            "platform": record.platform,
            "platform_source": self.source,
            "what_changed": headline(found.what_changed) if found else None,
            "comparability": found.comparability.model_dump(mode="json") if found else None,
            "warnings": [w.message for w in found.health.warnings if w == SAME_TRACE]
            if found
            else [],
        }
