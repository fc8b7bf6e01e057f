"""A run written straight into a folder it owns, its ledger sealed after every step.

The CLI's `report`/`analyze`/`compare` (into a staging folder) and each rank of a job (on a
Dask worker) and the Python API's `Run.save` run this way; the server's runs seal through their
`Run` objects instead. The load step is the same everywhere (report/loading.py), and
`write_loaded` writes what it built (docs/run-folder.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compare.comparison import Comparison
from ..report.files import ReportFiles
from ..report.loading import Loaded
from .folder import RunFolder
from .ledger import RunRecord, seal
from .steps import LOADED, Pipeline, RunResults


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

    def write_loaded(
        self, loaded: Loaded, trace_name: str, comparison: Comparison | None = None
    ) -> ReportFiles:
        """The load step's artifacts (the perf report, a comparison's tables) written into
        the run, and the step sealed."""
        folder = RunFolder(self.root, csv_cells=self.record.csv_cells)
        files = folder.write_perf_report(loaded.report, trace_name, loaded.health.gpu.model)
        if comparison is not None:
            folder.write_comparison(comparison)
        self.mark(LOADED)
        return files

    def pipeline(self, results: RunResults, **options: Any) -> Pipeline:
        """The pipeline of this run; `options` are Pipeline's (label, draw, ...)."""
        mark: Callable[..., None] = self.mark
        folder = RunFolder(self.root, csv_cells=self.record.csv_cells)
        return Pipeline(results, folder, done=self.done, mark=mark, **options)
