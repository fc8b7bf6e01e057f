"""Rows of TraceLens's unified_perf_summary.csv, with their op arguments decoded.

The reference writes Python reprs ("((8944, 1024), (1024, 2816))"); tests may read them with
`ast.literal_eval` (the product never evaluates trace strings).
"""

from __future__ import annotations

import ast
import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflens.analyzers.perf.base import OpArgs


@dataclass(frozen=True)
class ReferenceRow:
    folder: str
    row: dict[str, str]
    args: OpArgs

    def number(self, column: str) -> float:
        text = self.row.get(column, "")
        return float(text) if text not in ("", "nan") else math.nan

    @property
    def perf_params(self) -> dict[str, Any] | None:
        text = self.row.get("perf_params", "")
        return ast.literal_eval(text) if text and text != "None" else None


def _literal(text: str) -> tuple[Any, ...]:
    if not text:
        return ()
    value = ast.literal_eval(text)
    return tuple(value) if isinstance(value, list | tuple) else ()


def unified_rows(shared: Path, folder: str | None = None) -> Iterator[ReferenceRow]:
    """Every unified_perf_summary row of every reference folder (or of one folder)."""
    base = shared / "reference/tracelens"
    folders = [folder] if folder else sorted(p.name for p in base.iterdir() if p.is_dir())
    for name in folders:
        path = base / name / "perf_report_csvs/unified_perf_summary.csv"
        if not path.exists():
            continue
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                args = OpArgs(
                    name=row["name"],
                    dims=_literal(row["Input Dims"]),
                    types=tuple(str(t) for t in _literal(row["Input type"])),
                    strides=_literal(row["Input Strides"]),
                    concrete=tuple(str(c) for c in _literal(row["Concrete Inputs"])),
                )
                yield ReferenceRow(folder=name, row=row, args=args)
