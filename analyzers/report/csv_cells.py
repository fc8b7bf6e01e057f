"""Text cells a spreadsheet will not run as formulas, and the exact inverse for our readers.

A spreadsheet opening a CSV evaluates a cell that starts with `=`, `+`, `-` or `@` (some also
tab or carriage return) as a formula, so a kernel named `=HYPERLINK(...)` would run in the
reader's spreadsheet. OWASP's CSV-injection guidance: prefix such a text cell with a single
quote, which spreadsheets read as "text follows". Every CSV rooflens writes goes through
`escape_frame` / `escape_cell` unless the run asked for raw cells (`RAW`, recorded in the
run's record so our own readers know which they hold).

The escape is reversible: a text cell that starts with any number of quotes and then a
trigger gets one more quote, and `unescape_cell` removes exactly one quote from a cell of that
shape, so a name that genuinely starts with `'=` comes back as `'=`. Numbers are never
touched: numeric cells are not text, and text that is a plain decimal number (`-1.5`, `+2e3`)
is a number to every spreadsheet, not a formula. See docs/report-tables.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

import pandas as pd
from pandas.api import types as ptypes

CsvCells = Literal["escaped", "raw"]
ESCAPED: CsvCells = "escaped"
RAW: CsvCells = "raw"

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_QUOTED_TRIGGER = re.compile(r"'*[=+\-@\t\r]")  # used with .match: at the start only
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def needs_escape(text: str) -> bool:
    """Whether a spreadsheet could read this text as a formula once the CSV is opened (or it
    already starts with quotes before a trigger, so the escape stays reversible)."""
    return bool(_QUOTED_TRIGGER.match(text)) and not _NUMBER.fullmatch(text)


def escape_cell(value: Any) -> Any:
    """`value` with one leading quote added when it is text a spreadsheet would evaluate;
    anything that is not text is returned as it is."""
    if isinstance(value, str) and needs_escape(value):
        return "'" + value
    return value


def unescape_cell(value: Any) -> Any:
    """The inverse of `escape_cell` on what it writes: one leading quote removed from a cell
    that is one or more quotes followed by a trigger character."""
    if isinstance(value, str) and value.startswith("'") and _QUOTED_TRIGGER.match(value, 1):
        return value[1:]
    return value


def escape_row(values: Iterable[Any]) -> list[Any]:
    return [escape_cell(v) for v in values]


def unescape_row(values: Iterable[Any]) -> list[Any]:
    return [unescape_cell(v) for v in values]


def _text_column(series: pd.Series) -> bool:
    dtype = series.dtype
    return not (
        ptypes.is_numeric_dtype(dtype)
        or ptypes.is_bool_dtype(dtype)
        or ptypes.is_datetime64_any_dtype(dtype)
        or ptypes.is_timedelta64_dtype(dtype)
    )


def escape_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells and column names are escaped; numeric columns, and
    the numbers inside mixed columns, are left as they are."""
    out = frame.copy(deep=False)  # columns are replaced, never changed in place
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        if _text_column(column):
            out.isetitem(position, column.map(escape_cell))
    out.columns = [escape_cell(c) for c in out.columns]
    return out


def holds_carriage_return(frame: pd.DataFrame) -> bool:
    """Whether a text cell or column name holds a CR. Python's csv writer quotes a field only
    for a character of its line end, and a bare CR left unquoted ends the row in every reader
    (a cell after it would start a new row, unescaped), so such a table is written with CRLF
    line ends (RFC 4180), which quotes it."""
    if any(isinstance(c, str) and "\r" in c for c in frame.columns):
        return True
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if _text_column(column) and column.map(lambda v: isinstance(v, str) and "\r" in v).any():
            return True
    return False


def csv_cells_of(raw: bool) -> CsvCells:
    """The setting for a `raw` switch (a CLI flag, an API keyword)."""
    return RAW if raw else ESCAPED
