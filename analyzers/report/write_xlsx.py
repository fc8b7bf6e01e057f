"""One XLSX workbook a person enjoys opening and printing: a summary first, then one sheet per
table.

Every table sheet has a bold frozen header, an autofilter, number formats by column kind,
widths sized to the content, the roofline figures right after the name with efficiency shaded
red -> yellow -> green, and a page setup that prints it landscape, one page wide, with the
header on every page (xlsx_layout.py). Cell values go through xlsx_cells.py: trace text is
always text. The workbook is built in memory (openpyxl's write-only mode measured slower on
report-sized tables: it spools each sheet to a temporary file and re-types every styled cell).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from .write_csv import atomic_write_bytes, for_output
from .xlsx_cells import cell, number_format, plain_value, shown_text
from .xlsx_layout import Styles, is_efficiency, print_setup, shade_efficiency, workbook_columns

MAX_WIDTH = 60
EXCEL_SHEET_NAME = 31
SAMPLE_ROWS = 200  # rows read to size a column


def _width(values: Sequence[Any], header: str, fmt: str | None = None) -> float:
    """A column's width in characters: its widest value as shown (numbers in `fmt`), or its
    header (which wraps), at most `MAX_WIDTH`."""
    lengths = [len(str(header)) * 0.8]
    lengths += [len(shown_text(v, fmt)) for v in values if v is not None]
    return min(max(lengths) + 2, MAX_WIDTH)


def add_table_sheet(
    book: Workbook, styles: Styles, name: str, frame: pd.DataFrame, *, rendered: bool = False
) -> Worksheet:
    """A sheet holding one table, styled; `rendered`: `frame` is already `for_output`'s."""
    ws = book.create_sheet(name[:EXCEL_SHEET_NAME])
    table = frame if rendered else for_output(frame)
    columns = workbook_columns([str(c) for c in table.columns])
    table = table[columns] if columns != list(table.columns) else table
    letters = [get_column_letter(c) for c in range(1, len(columns) + 1)]
    last_row = max(len(table), 1) + 1
    for letter, column in zip(letters, columns, strict=True):
        sample = table[column].head(SAMPLE_ROWS)
        ws.column_dimensions[letter].width = _width(sample, column, number_format(column))
        if is_efficiency(column) and len(table):
            shade_efficiency(ws, f"{letter}2:{letter}{last_row}")
    ws.freeze_panes = "B2"
    if columns:
        ws.auto_filter.ref = f"A1:{letters[-1]}{last_row}"
    print_setup(ws, header_row=1)
    ws.append([cell(ws, c, styles.header) for c in columns])
    number = [styles.number(c) for c in columns]
    for values in table.itertuples(index=False, name=None):
        ws.append([cell(ws, v, s) for v, s in zip(values, number, strict=True)])
    return ws


def add_summary_sheet(
    book: Workbook,
    styles: Styles,
    title: str,
    facts: Mapping[str, Any],
    timeline: pd.DataFrame,
    top_ops: pd.DataFrame,
    notes: Sequence[str],
) -> Worksheet:
    """The first sheet: what was analysed, where GPU time went, the top operations (with
    their shapes, so two rows of one operator read as two signatures)."""
    ws = book.create_sheet("summary")
    rows: list[list[tuple[Any, Any]]] = [[(title, styles.title)], []]
    rows += [[(k, styles.bold), (v, styles.left)] for k, v in facts.items()]
    scales: list[tuple[int, int, int]] = []  # (column, first row, last row) to shade
    for heading, frame in (("GPU timeline", timeline), ("Top operations by GPU time", top_ops)):
        columns = workbook_columns([str(c) for c in frame.columns])
        rows += [[], [(heading, styles.section)], [(c, styles.header) for c in columns]]
        first = len(rows) + 1
        number = [styles.number(c) for c in columns]
        for values in frame[columns].itertuples(index=False, name=None):
            rows.append(list(zip(values, number, strict=True)))
        scales += [(i, first, len(rows)) for i, c in enumerate(columns, 1) if is_efficiency(c)]
    if notes:
        rows += [[], [("Notes", styles.section)], *([(n, None)] for n in notes)]

    widths: dict[int, float] = {}
    for row in rows[2:]:  # the title spills over empty cells; it sizes nothing
        for col, (value, style) in enumerate(row, start=1):
            shown = f"{value:,.3f}" if style is not None and isinstance(value, float) else value
            widths[col] = max(widths.get(col, 10), _width([plain_value(shown)], ""))
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = width
    for col, first, last in scales:
        if last >= first:
            letter = get_column_letter(col)
            shade_efficiency(ws, f"{letter}{first}:{letter}{last}")
    ws.freeze_panes = "A2"
    print_setup(ws, header_row=1)
    for row in rows:
        ws.append([cell(ws, value, style) for value, style in row])
    return ws


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
    book = Workbook()
    book.remove(book.active)  # the default empty sheet
    styles = Styles.of(book)
    add_summary_sheet(book, styles, title, facts, sheets["gpu_timeline"], top_ops, notes)
    for name, frame in sheets.items():
        add_table_sheet(book, styles, name, frame, rendered=rendered)
    buffer = io.BytesIO()
    book.save(buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return path
