"""Values of workbook cells: numbers as numbers, trace text as text and never as a formula.

Operator and kernel names come from the trace, and a trace can hold any text. openpyxl reads a
string that starts with `=` as a formula, and a worksheet cannot hold some control characters
at all, so every text cell of the workbook goes through `text_cell`: characters XML cannot
hold become U+FFFD, overlong text is cut, and the cell is typed as a string whatever it starts
with (`=`, `+`, `-`, `@` included), so the workbook shows the name as the trace wrote it and
no spreadsheet evaluates it. The CSVs' counterpart is `csv_cells.py` (a CSV has no cell
types, so there the guard is a quote).
"""

from __future__ import annotations

import math
import re
from typing import Any

from openpyxl.cell import Cell
from openpyxl.styles.cell_style import StyleArray
from openpyxl.worksheet.worksheet import Worksheet

# Characters XML 1.0 cannot hold (they would make a file Excel has to "repair", or one no
# reader opens), and Excel's limit on the text of one cell.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
EXCEL_CELL_CHARS = 32_767


def xlsx_text(text: str) -> str:
    """Text a worksheet can hold: forbidden characters become U+FFFD, overlong text is cut."""
    text = _NOT_XML.sub("\ufffd", text)
    if len(text) > EXCEL_CELL_CHARS:
        text = text[: EXCEL_CELL_CHARS - 1] + "…"
    return text


def plain_value(value: Any) -> Any:
    """A numpy scalar as a Python one; NaN, infinities and None as an empty cell (Excel has
    no NaN); text through `xlsx_text`."""
    if hasattr(value, "item"):
        value = value.item()
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if isinstance(value, str):
        return xlsx_text(value) or None  # an empty text is no value, as Excel keeps it
    return value


def text_cell(ws: Worksheet, text: str, style: StyleArray | None = None) -> Cell:
    """A string cell holding `text` (already `xlsx_text`), typed as text even when it starts
    with `=`: the one place the workbook decides a value is data, not a formula."""
    cell = Cell(ws, value=text, style_array=style)  # the cell takes a copy of the style
    cell.data_type = "s"  # openpyxl made it "f" for a leading "="; "e" for "#N/A"-like text
    return cell


def cell(ws: Worksheet, value: Any, style: StyleArray | None = None) -> Any:
    """What to append for `value`: a plain number (or None: no cell) when it needs no style,
    the cheapest; else a styled cell (an empty one keeps its column's format); text always
    through `text_cell`."""
    value = plain_value(value)
    if isinstance(value, str):
        return text_cell(ws, value, style)
    if style is None:
        return value
    return Cell(ws, value=value, style_array=style)


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


_SHOWN = {"#,##0.000": "{:,.3f}", "0.00": "{:.2f}", "#,##0": "{:,.0f}"}


def shown_text(value: Any, fmt: str | None) -> str:
    """A value as its cell shows it under `fmt` (what a column's width must hold)."""
    if fmt is not None and isinstance(value, int | float) and not isinstance(value, bool):
        return _SHOWN[fmt].format(value)
    return str(value)
