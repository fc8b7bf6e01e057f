"""One XLSX workbook a person enjoys opening: a summary first, then one sheet per table.

Every table sheet has a bold frozen header, an autofilter, number formats by column kind,
widths sized to the content, and roofline efficiency shaded red -> yellow -> green.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.formatting.rule import ColorScaleRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet

from rooflens.analyzers.report.write_csv import atomic_write_bytes, for_output

HEADER_FILL = PatternFill("solid", start_color="1F3864")
HEADER_FONT = Font(bold=True, color="FFFFFF")
TITLE_FONT = Font(bold=True, size=14)
SECTION_FONT = Font(bold=True, size=12)
MAX_WIDTH = 60
EXCEL_SHEET_NAME = 31
EFFICIENCY = ColorScaleRule(
    start_type="num",
    start_value=0,
    start_color="F8696B",
    mid_type="num",
    mid_value=50,
    mid_color="FFEB84",
    end_type="num",
    end_value=100,
    end_color="63BE7B",
)


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


# Characters XML 1.0 cannot hold (openpyxl refuses the C0 controls; the rest would make a
# file Excel has to "repair"), and Excel's limit on the text of one cell.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
EXCEL_CELL_CHARS = 32_767


def cell_text(text: str) -> str:
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
        return cell_text(value)
    return value


def _style_header(ws: Worksheet, row: int, n_columns: int) -> None:
    for col in range(1, n_columns + 1):
        cell = ws.cell(row=row, column=col)
        cell.fill = HEADER_FILL
        cell.font = HEADER_FONT
        cell.alignment = Alignment(wrap_text=True, vertical="top")


def _fit_widths(ws: Worksheet, columns: Sequence[str], sample: pd.DataFrame) -> None:
    for i, column in enumerate(columns, start=1):
        lengths = [len(str(column)) * 0.8]
        lengths += [len(str(v)) for v in sample[column].head(200) if v is not None]
        ws.column_dimensions[get_column_letter(i)].width = min(max(lengths) + 2, MAX_WIDTH)


def add_table_sheet(wb: Workbook, name: str, frame: pd.DataFrame) -> Worksheet:
    """A sheet holding one table, styled."""
    ws = wb.create_sheet(name[:EXCEL_SHEET_NAME])
    table = for_output(frame)
    columns = list(table.columns)
    ws.append([_plain(c) for c in columns])
    for row in table.itertuples(index=False):
        ws.append([_plain(v) for v in row])
    _style_header(ws, 1, len(columns))
    ws.freeze_panes = "B2"
    if columns:
        ws.auto_filter.ref = f"A1:{get_column_letter(len(columns))}{max(len(table), 1) + 1}"
    for i, column in enumerate(columns, start=1):
        fmt = number_format(column)
        letter = get_column_letter(i)
        if fmt:
            for cell in ws[letter][1:]:
                cell.number_format = fmt
        if column.startswith("Pct Roofline") and len(table):
            ws.conditional_formatting.add(f"{letter}2:{letter}{len(table) + 1}", EFFICIENCY)
    _fit_widths(ws, columns, table)
    return ws


def add_summary_sheet(
    wb: Workbook,
    title: str,
    facts: Mapping[str, Any],
    timeline: pd.DataFrame,
    top_ops: pd.DataFrame,
    notes: Sequence[str],
) -> Worksheet:
    """The first sheet: what was analysed, where GPU time went, the top operations."""
    ws = wb.active
    ws.title = "summary"
    ws["A1"] = cell_text(title)
    ws["A1"].font = TITLE_FONT
    widths: dict[int, float] = {}

    def track(col: int, value: Any, fmt: str | None = None) -> None:
        text = f"{value:,.3f}" if fmt and isinstance(value, float) else str(value)
        widths[col] = min(max(widths.get(col, 10), len(text) + 2), MAX_WIDTH)

    row = 3
    for key, value in facts.items():
        ws.cell(row=row, column=1, value=_plain(key)).font = Font(bold=True)
        cell = ws.cell(row=row, column=2, value=_plain(value))
        cell.alignment = Alignment(horizontal="left")
        track(1, key)
        track(2, value)
        row += 1
    for heading, frame in (("GPU timeline", timeline), ("Top operations by GPU time", top_ops)):
        row += 1
        ws.cell(row=row, column=1, value=heading).font = SECTION_FONT
        row += 1
        columns = list(frame.columns)
        for col, name in enumerate(columns, start=1):
            ws.cell(row=row, column=col, value=_plain(name))
            track(col, name)
        _style_header(ws, row, len(columns))
        first_data = row + 1
        for values in frame.itertuples(index=False):
            row += 1
            for col, (name, value) in enumerate(zip(columns, values, strict=True), start=1):
                cell = ws.cell(row=row, column=col, value=_plain(value))
                fmt = number_format(name)
                if fmt:
                    cell.number_format = fmt
                track(col, _plain(value), fmt)
        for col, name in enumerate(columns, start=1):
            if name.startswith("Pct Roofline") and row >= first_data:
                letter = get_column_letter(col)
                ws.conditional_formatting.add(f"{letter}{first_data}:{letter}{row}", EFFICIENCY)
        row += 1
    if notes:
        row += 1
        ws.cell(row=row, column=1, value="Notes").font = SECTION_FONT
        for note in notes:
            row += 1
            ws.cell(row=row, column=1, value=_plain(note))
    for col, width in widths.items():
        ws.column_dimensions[get_column_letter(col)].width = width
    return ws


def write_xlsx(
    path: Path,
    sheets: Mapping[str, pd.DataFrame],
    *,
    title: str,
    facts: Mapping[str, Any],
    top_ops: pd.DataFrame,
    notes: Sequence[str] = (),
) -> Path:
    """Summary sheet, then every table; written atomically."""
    wb = Workbook()
    add_summary_sheet(wb, title, facts, sheets["gpu_timeline"], top_ops, notes)
    for name, frame in sheets.items():
        add_table_sheet(wb, name, frame)
    buffer = io.BytesIO()
    wb.save(buffer)
    atomic_write_bytes(path, buffer.getvalue())
    return path
