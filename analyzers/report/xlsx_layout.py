"""How the workbook's sheets look and print: cell styles, the order of a sheet's columns, the
roofline colour scale, the frozen header and the page setup.

Printing: every sheet is landscape, scaled to one page wide (as many pages down as it takes)
and repeats its header row on each page, so a printed table keeps its columns together and
labelled. On screen the roofline figures sit right after the operation's name, where the
colour scale is seen (TraceLens's CSV order puts them 36 columns to the right; the CSVs keep
that order, docs/deviations.md "Workbook column order").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openpyxl import Workbook
from openpyxl.cell import Cell
from openpyxl.formatting.rule import ColorScaleRule
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.styles.cell_style import StyleArray
from openpyxl.worksheet.properties import PageSetupProperties
from openpyxl.worksheet.worksheet import Worksheet

from .xlsx_cells import number_format

# The roofline figures a reader compares first, in the order they sit after the name; the
# per-op mean where the sheet aggregates instances, the value itself where it does not.
ROOFLINE_LEAD = (
    ("Pct Roofline_mean", "Pct Roofline"),
    ("TFLOPS/s_mean", "TFLOPS/s"),
    ("TB/s_mean", "TB/s"),
)
# roofline efficiency (%): red at 0, yellow at 50, green at 100
EFFICIENCY_SCALE = {
    "start_type": "num",
    "start_value": 0,
    "start_color": "FFF8696B",
    "mid_type": "num",
    "mid_value": 50,
    "mid_color": "FFFFEB84",
    "end_type": "num",
    "end_value": 100,
    "end_color": "FF63BE7B",
}


def workbook_columns(columns: Sequence[str]) -> list[str]:
    """`columns` with the roofline lead columns moved right after `name` (or the first column);
    a sheet without them keeps its order."""
    columns = list(columns)
    lead = []
    for choices in ROOFLINE_LEAD:
        found = next((c for c in choices if c in columns), None)
        if found is not None:
            lead.append(found)
    if not lead:
        return columns
    first = "name" if "name" in columns else columns[0]
    rest = [c for c in columns if c not in lead and c != first]
    return [first, *lead, *rest]


def is_efficiency(column: str) -> bool:
    """Whether the column holds a percent of roofline (the colour-scaled columns)."""
    return column.startswith("Pct Roofline")


def shade_efficiency(ws: Worksheet, ref: str) -> None:
    """Roofline efficiency in `ref` (e.g. `B2:B97`) shaded red -> yellow -> green."""
    ws.conditional_formatting.add(ref, ColorScaleRule(**EFFICIENCY_SCALE))


def print_setup(ws: Worksheet, header_row: int) -> None:
    """Landscape, one page wide and any number of pages down, rows 1..`header_row` printed
    on every page."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0  # 0: as many pages down as the rows need
    ws.sheet_properties.pageSetUpPr = PageSetupProperties(fitToPage=True)
    ws.print_title_rows = f"1:{header_row}"
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.5


@dataclass(frozen=True)
class Styles:
    """The style of each kind of cell, registered once in one workbook (a cell takes a copy
    of its style array, which is much cheaper than styling every cell by its attributes)."""

    title: StyleArray
    bold: StyleArray
    left: StyleArray
    section: StyleArray
    header: StyleArray
    by_format: dict[str, StyleArray]

    @classmethod
    def of(cls, book: Workbook) -> Styles:
        ws = book.create_sheet("styles")  # only to register styles; removed at once

        def style(**attrs) -> StyleArray:
            cell = Cell(ws)
            for name, value in attrs.items():
                setattr(cell, name, value)
            return StyleArray(cell._style)

        styles = cls(
            title=style(font=Font(bold=True, size=14)),
            bold=style(font=Font(bold=True)),
            left=style(alignment=Alignment(horizontal="left")),
            section=style(font=Font(bold=True, size=12)),
            header=style(
                font=Font(bold=True, color="FFFFFFFF"),
                fill=PatternFill("solid", fgColor="FF1F3864"),
                alignment=Alignment(vertical="top", wrap_text=True),
            ),
            by_format={fmt: style(number_format=fmt) for fmt in ("#,##0.000", "0.00", "#,##0")},
        )
        book.remove(ws)
        return styles

    def number(self, column: str) -> StyleArray | None:
        fmt = number_format(column)
        return self.by_format[fmt] if fmt else None
