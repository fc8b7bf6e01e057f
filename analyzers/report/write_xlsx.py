"""One XLSX workbook a person enjoys opening: a summary first, then one sheet per table.

Every table sheet has a bold frozen header, an autofilter, number formats by column kind,
widths sized to the content, and roofline efficiency shaded red -> yellow -> green.

The workbook is written directly as SpreadsheetML parts in a zip (xlsx_parts.py holds the
fixed parts): a few styles and plain cells need no spreadsheet library, and writing the XML
text ourselves is several times faster than building a cell object per value.
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import pandas as pd

from . import xlsx_parts
from .write_csv import atomic_write_bytes, for_output

MAX_WIDTH = 60
EXCEL_SHEET_NAME = 31
# cell styles: positions in xlsx_parts.STYLES' cellXfs
PLAIN, TITLE, BOLD, LEFT, SECTION, HEADER = range(6)
NUMBER_STYLES = {"#,##0.000": 6, "0.00": 7, "#,##0": 8}


def number_format(column: str) -> str | None:
    """Excel format for a column, from its name (units are in TraceLens's headers)."""
    lowered = column.lower()
    if "percent" in lowered or "pct" in lowered or "(%)" in column:
        return "0.00"
    if lowered.endswith("count") or column in ("Count", "ex_UID", "num_kernels", "UID"):
        return "#,##0"
    if "(µs)" in column or "_us" in lowered or "time_" in lowered or "time ms" in lowered:
        return "#,##0.000"
    if any(k in column for k in ("GFLOPS", "TFLOPS", "TB/s", "(MB)", "FLOPS/Byte")):
        return "#,##0.000"
    return None


def _number_style(column: str) -> int:
    fmt = number_format(column)
    return NUMBER_STYLES[fmt] if fmt else PLAIN


# Characters XML 1.0 cannot hold (they would make a file Excel has to "repair", or one no
# reader opens), and Excel's limit on the text of one cell.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
EXCEL_CELL_CHARS = 32_767


def xlsx_text(text: str) -> str:
    """Text a worksheet can hold: forbidden characters become U+FFFD, overlong text is cut.

    Operator and kernel names come from the trace, and a trace can hold any character.
    """
    text = _NOT_XML.sub("\ufffd", text)
    if len(text) > EXCEL_CELL_CHARS:
        text = text[: EXCEL_CELL_CHARS - 1] + "…"
    return text


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None  # an empty cell: Excel has no NaN or infinity
    if isinstance(value, str):
        return xlsx_text(value)
    return value


def column_letter(index: int) -> str:
    """1 -> A, 27 -> AA."""
    letters = ""
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _cell(ref: str, value: Any, style: int) -> str:
    """One `<c>` element ('' for an empty unstyled cell); `value` is already `_plain`."""
    s = f' s="{style}"' if style else ""
    if value is None or value == "":  # an empty text is no value, as Excel keeps it
        return f'<c r="{ref}"{s}/>' if style else ""
    if isinstance(value, bool):
        return f'<c r="{ref}"{s} t="b"><v>{int(value)}</v></c>'
    if isinstance(value, int | float):
        return f'<c r="{ref}"{s} t="n"><v>{value:.16g}</v></c>'
    text = str(value)
    space = ' xml:space="preserve"' if text.strip() != text else ""
    return f'<c r="{ref}"{s} t="inlineStr"><is><t{space}>{escape(text)}</t></is></c>'


@dataclass
class Sheet:
    """A worksheet being filled: cells by row, column widths, and its table decorations."""

    name: str
    rows: dict[int, list[str]] = field(default_factory=dict)
    widths: dict[int, float] = field(default_factory=dict)
    columns: int = 0
    frozen: bool = False
    autofilter: str | None = None
    scales: list[str] = field(default_factory=list)  # ranges shaded by efficiency

    def set(self, row: int, col: int, value: Any, style: int = PLAIN) -> None:
        """Add a cell; within a row, cells must be added left to right."""
        xml = _cell(f"{column_letter(col)}{row}", _plain(value), style)
        if xml:
            self.rows.setdefault(row, []).append(xml)
            self.columns = max(self.columns, col)

    def xml(self) -> str:
        last_row = max(self.rows, default=1)
        dimension = f"A1:{column_letter(max(self.columns, 1))}{last_row}"
        cols = "".join(
            f'<col min="{c}" max="{c}" width="{w:g}" customWidth="1"/>'
            for c, w in sorted(self.widths.items())
        )
        body = "".join(f'<row r="{r}">{"".join(cells)}</row>' for r, cells in self.rows.items())
        return xlsx_parts.worksheet(
            dimension=dimension,
            frozen=self.frozen,
            cols=cols,
            data=body,
            autofilter=self.autofilter,
            scales=self.scales,
        )


def add_table_sheet(
    sheets: list[Sheet], name: str, frame: pd.DataFrame, *, rendered: bool = False
) -> Sheet:
    """A sheet holding one table, styled; `rendered`: `frame` is already `for_output`'s."""
    ws = Sheet(name[:EXCEL_SHEET_NAME])
    sheets.append(ws)
    table = frame if rendered else for_output(frame)
    columns = list(table.columns)
    for col, column in enumerate(columns, start=1):
        ws.set(1, col, column, HEADER)
    styles = [_number_style(str(c)) for c in columns]
    letters = [column_letter(c) for c in range(1, len(columns) + 1)]
    for row, values in enumerate(table.itertuples(index=False, name=None), start=2):
        cells = [
            _cell(f"{letter}{row}", _plain(v), style)
            for letter, v, style in zip(letters, values, styles, strict=True)
        ]
        ws.rows[row] = [c for c in cells if c]
    ws.columns = max(ws.columns, len(columns))
    ws.frozen = True
    if columns:
        ws.autofilter = f"A1:{letters[-1]}{max(len(table), 1) + 1}"
    for letter, column in zip(letters, columns, strict=True):
        if str(column).startswith("Pct Roofline") and len(table):
            ws.scales.append(f"{letter}2:{letter}{len(table) + 1}")
    _fit_widths(ws, columns, table)
    return ws


def _fit_widths(ws: Sheet, columns: Sequence[str], sample: pd.DataFrame) -> None:
    for i, column in enumerate(columns, start=1):
        lengths = [len(str(column)) * 0.8]
        lengths += [len(str(v)) for v in sample[column].head(200) if v is not None]
        ws.widths[i] = min(max(lengths) + 2, MAX_WIDTH)


def add_summary_sheet(
    sheets: list[Sheet],
    title: str,
    facts: Mapping[str, Any],
    timeline: pd.DataFrame,
    top_ops: pd.DataFrame,
    notes: Sequence[str],
) -> Sheet:
    """The first sheet: what was analysed, where GPU time went, the top operations."""
    ws = Sheet("summary")
    sheets.append(ws)
    ws.set(1, 1, title, TITLE)

    def track(col: int, value: Any, fmt: str | None = None) -> None:
        text = f"{value:,.3f}" if fmt and isinstance(value, float) else str(value)
        ws.widths[col] = min(max(ws.widths.get(col, 10), len(text) + 2), MAX_WIDTH)

    row = 3
    for key, value in facts.items():
        ws.set(row, 1, key, BOLD)
        ws.set(row, 2, value, LEFT)
        track(1, key)
        track(2, value)
        row += 1
    for heading, frame in (("GPU timeline", timeline), ("Top operations by GPU time", top_ops)):
        row = _summary_table(ws, row + 1, heading, frame, track) + 1
    if notes:
        row += 1
        ws.set(row, 1, "Notes", SECTION)
        for note in notes:
            row += 1
            ws.set(row, 1, note)
    return ws


def _summary_table(ws: Sheet, row: int, heading: str, frame: pd.DataFrame, track) -> int:
    """A titled table of the summary sheet from `row` on; returns its last row."""
    ws.set(row, 1, heading, SECTION)
    row += 1
    columns = list(frame.columns)
    for col, name in enumerate(columns, start=1):
        ws.set(row, col, name, HEADER)
        track(col, name)
    first_data = row + 1
    for values in frame.itertuples(index=False, name=None):
        row += 1
        for col, (name, value) in enumerate(zip(columns, values, strict=True), start=1):
            ws.set(row, col, value, _number_style(name))
            track(col, _plain(value), number_format(name))
    for col, name in enumerate(columns, start=1):
        if name.startswith("Pct Roofline") and row >= first_data:
            letter = column_letter(col)
            ws.scales.append(f"{letter}{first_data}:{letter}{row}")
    return row


def write_xlsx(
    path: Path,
    sheets: Mapping[str, pd.DataFrame],
    *,
    title: str,
    facts: Mapping[str, Any],
    top_ops: pd.DataFrame,
    notes: Sequence[str] = (),
    rendered: bool = False,
) -> Path:
    """Summary sheet, then every table; written atomically. `rendered`: the sheets are
    already `for_output` tables (structured cells as JSON text)."""
    book: list[Sheet] = []
    add_summary_sheet(book, title, facts, sheets["gpu_timeline"], top_ops, notes)
    for name, frame in sheets.items():
        add_table_sheet(book, name, frame, rendered=rendered)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        names = [ws.name for ws in book]
        filters = [ws.autofilter for ws in book]
        for part, text in xlsx_parts.package(names, filters).items():
            archive.writestr(part, text)
        for i, ws in enumerate(book, start=1):
            archive.writestr(f"xl/worksheets/sheet{i}.xml", ws.xml())
    atomic_write_bytes(path, buffer.getvalue())
    return path
