"""The run folder: every artifact a run writes, in the layout of `analyzers.layout`.

Each write is atomic (a temporary file renamed into place). The stages never touch files;
the pipeline hands their typed results here. The reads are the other direction, used only
when a run is restored after a restart: the words a model wrote (findings, model identity,
report prose) cannot be recomputed, so they are read back into typed objects here.
See docs/run-folder.md.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
from pydantic import BaseModel, ValidationError

from .. import layout
from ..categories.any_metrics import Metrics, metrics_document
from ..categories.trace2_system import Trace2System
from ..compare.compare_columns import DIFF_STATS_SHEET
from ..compare.comparison import Comparison
from ..findings.composing.model_info import (
    CONDENSED_COLUMNS,
    ModelIdentification,
    module_names,
)
from ..findings.composing.plot import PlotResult
from ..findings.composing.prose import ReportProse
from ..findings.contract.contract import Findings, parse_findings, render_findings
from ..findings.drafting.drafts import tier_for
from ..findings.ranking.priorities import PriorityData
from ..prepare.categories import gpu_utilization
from ..prepare.category_data import CategoryData
from ..prepare.manifest import CategoryTables, Manifest
from ..report import files
from ..report.build import PerfReport
from ..report.csv_cells import ESCAPED, CsvCells
from ..report.write_csv import atomic_write_bytes, table_csv, write_csv_folder
from .annotated_trace import write_annotated

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class RunFolder:
    """A run's folder (already checked against the allowed directories by the caller).
    `csv_cells`: how text cells of its CSVs are written (escaped against spreadsheet formulas,
    or raw); the run's record says which (docs/report-tables.md#text-cells)."""

    root: Path
    csv_cells: CsvCells = ESCAPED

    def _bytes(self, rel: str, data: bytes) -> Path:
        path = self.root / rel
        atomic_write_bytes(path, data)
        return path

    def _text(self, rel: str, text: str) -> Path:
        return self._bytes(rel, text.encode("utf-8"))

    def _json(self, rel: str, value: Any) -> Path:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        return self._text(rel, json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")

    # -- writes, in pipeline order ------------------------------------------------------

    def write_perf_report(self, report: PerfReport, trace_name: str, gpu: str) -> files.ReportFiles:
        return files.write_perf_report(report, self.root, trace_name, gpu, cells=self.csv_cells)

    def write_comparison(self, comparison: Comparison) -> list[Path]:
        """A comparative run's own tables: trace 1's with the comparison columns and
        diff_stats, trace 2's, and trace 2's timeline figures (docs/compare.md)."""
        trace1 = {**comparison.trace1_sheets, DIFF_STATS_SHEET: comparison.diff_stats}
        cells = self.csv_cells
        written = write_csv_folder(trace1, self.root / layout.TRACE1_CSVS, cells=cells)
        written += write_csv_folder(
            comparison.report.sheets, self.root / layout.TRACE2_CSVS, cells=cells
        )
        figures = gpu_utilization(comparison.report.sheets.get("gpu_timeline"))
        written.append(self._json(layout.TRACE2_UTILIZATION, figures))
        return written

    def write_trace2_system(self, system: Trace2System) -> list[Path]:
        """Trace 2's system documents, apart from trace 1's (docs/compare.md)."""
        return [
            self._json(layout.trace2_metrics(key), metrics_document(metrics))
            for key, metrics in system.documents().items()
        ]

    def write_category_data(self, data: CategoryData) -> None:
        self._json(layout.MULTI_KERNEL_DATA, data.multi_kernel)
        candidates = [c.as_dict() for c in data.fusion_candidates]
        self._text(layout.FUSION_CANDIDATES, json.dumps(candidates, indent=2, default=str))
        self.write_category_tables(data.tables)

    def write_category_tables(self, tables: CategoryTables) -> None:
        """Per category its ops CSV, metadata and tree data; the manifest last."""
        for key, rows in tables.ops.items():
            text = table_csv(rows, self.csv_cells) if len(rows.columns) else "\n"
            self._text(layout.ops_csv(key), text)
        for key, meta in tables.metadata.items():
            self._text(layout.metadata(key), meta.model_dump_json(indent=2) + "\n")
        for key, tree in tables.tree_data.items():
            self._json(layout.tree_data(key), tree)
        self._text(layout.MANIFEST, tables.manifest.model_dump_json(indent=2) + "\n")

    def write_metrics(self, key: str, metrics: Metrics) -> Path:
        return self._json(layout.metrics(key), metrics_document(metrics))

    def write_findings(self, key: str, findings: Findings) -> Path:
        return self._text(layout.findings(key), render_findings(findings))

    def write_priorities(self, data: PriorityData) -> Path:
        return self._json(layout.PRIORITIES, data)

    def write_identity(self, rows: list[dict[str, str]], identity: ModelIdentification) -> None:
        condensed = pd.DataFrame(
            [[row.get(c, "") for c in CONDENSED_COLUMNS] for row in rows], columns=CONDENSED_COLUMNS
        )
        self._text(layout.CONDENSED_OPS, table_csv(condensed, self.csv_cells, rendered=True))
        self._text(layout.NN_MODULES, "".join(f"{n}\n" for n in module_names(rows)))
        self._json(layout.MODEL_INFO, identity)

    def write_submitted_identity(self, info: ModelIdentification) -> Path:
        return self._json(layout.SUBMITTED_MODEL, info.model_dump(exclude_defaults=True))

    def write_plot(self, plot: PlotResult) -> None:
        if plot.png_bytes is not None:
            self._bytes(layout.PLOT, plot.png_bytes)
            self._bytes(layout.PLOT_BASE64, base64.b64encode(plot.png_bytes))

    def write_prose(self, prose: ReportProse) -> Path:
        text = prose.model_dump_json(indent=2, exclude_none=True) + "\n"
        return self._text(layout.REPORT_PROSE, text)

    def write_analysis_report(self, text: str) -> Path:
        return self._text(layout.REPORT, text)

    def write_report_page(self, page: str) -> Path:
        return self._text(layout.REPORT_HTML, page)

    def write_annotated_trace(self, trace: Path, events: Sequence[dict[str, Any]]) -> Path:
        """The trace with the findings' tracks (pipeline/annotated_trace.py)."""
        return write_annotated(trace, events, self.root / layout.ANNOTATED_TRACE)

    # -- reads: what a restored run cannot recompute --------------------------------------

    def has(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def read_findings(self, key: str) -> Findings | None:
        """The category's findings as last written (drafted or submitted), or None."""
        try:
            return parse_findings(
                (self.root / layout.findings(key)).read_text("utf-8"), tier_for(key)
            )
        except (OSError, ValueError):
            return None

    def read_manifest(self) -> Manifest | None:
        """The manifest as written (listing a run's categories without recomputing them)."""
        return _model(self.root / layout.MANIFEST, Manifest)

    def read_submitted_identity(self) -> ModelIdentification | None:
        return _model(self.root / layout.SUBMITTED_MODEL, ModelIdentification)

    def read_plot(self) -> bytes | None:
        """The plot's PNG as drawn (None when there is none)."""
        try:
            return (self.root / layout.PLOT).read_bytes()
        except OSError:
            return None

    def read_prose(self) -> ReportProse | None:
        return _model(self.root / layout.REPORT_PROSE, ReportProse)


def _model(path: Path, kind: type[M]) -> M | None:
    try:
        return kind.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None
