"""A run written straight into a folder it owns, its ledger sealed after every step.

The CLI's `report`/`analyze`/`compare` (into a staging folder) and each rank of a job (on a
Dask worker) run this way; the server's runs seal through their `Run` objects instead. The
load step is the same everywhere: the perf report built on the run's platform and written
into the folder (docs/run-folder.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflens.analyzers.perf.categories import CategoryTable
from rooflens.analyzers.perf.platforms import Platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.ledger import RunRecord, seal
from rooflens.analyzers.pipeline.steps import Pipeline, RunResults
from rooflens.analyzers.report.build import PerfReport, build_report
from rooflens.analyzers.report.files import ReportFiles
from rooflens.analyzers.trace.model import TraceModel


def write_report(
    model: TraceModel,
    platform: Platform | None,
    folder: RunFolder,
    trace_name: str,
    gpu_model: str,
    categories: CategoryTable | None = None,
) -> tuple[PerfReport, ReportFiles]:
    """The load step's artifacts: the perf report built and written into `folder`."""
    report = build_report(model, platform, categories=categories)
    return report, folder.write_perf_report(report, trace_name, gpu_model)


@dataclass
class SealedRun:
    """The run in `root` and its ledger (`record`), resealed each time a step is marked."""

    root: Path
    record: RunRecord

    def mark(self, *steps: str) -> None:
        """Record `steps` (none: only the hashes of what was written since) in run.json."""
        for step in steps or (None,):
            self.record = seal(self.root, self.record, step)

    def done(self, step: str) -> bool:
        return step in self.record.steps

    def pipeline(self, results: RunResults, **options: Any) -> Pipeline:
        """The pipeline of this run; `options` are Pipeline's (label, draw, ...)."""
        mark: Callable[..., None] = self.mark
        folder = RunFolder(self.root, csv_cells=self.record.csv_cells)
        return Pipeline(results, folder, done=self.done, mark=mark, **options)
