"""Text cells escaped against spreadsheet formulas, numbers untouched, and read back exactly."""

from __future__ import annotations

import csv
import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rooflens.analyzers.report.csv_cells import (
    RAW,
    escape_cell,
    escape_frame,
    needs_escape,
    unescape_cell,
    unescape_row,
)
from rooflens.analyzers.report.write_csv import table_csv, write_csv_folder

HOSTILE = {
    '=HYPERLINK("http://evil.example","x")': '\'=HYPERLINK("http://evil.example","x")',
    "+cmd|' /C calc'!A0": "'+cmd|' /C calc'!A0",
    "-2+3": "'-2+3",
    "@SUM(1)": "'@SUM(1)",
    "\t=1+1": "'\t=1+1",
    "\r=1+1": "'\r=1+1",
    "-inf": "'-inf",  # not a decimal number: LibreOffice reads =-inf
    "'=already": "''=already",  # a quote before a trigger gets one more
    "''@twice": "'''@twice",
}
UNTOUCHED = ["aten::mm", "'plain quote", "", "x=1", "-1.5", "+2e3", "-.5", "1", "'", "[-1, 2]"]


@pytest.mark.parametrize(("text", "written"), sorted(HOSTILE.items()))
def test_a_text_cell_a_spreadsheet_would_evaluate_gets_one_leading_quote(text, written):
    assert escape_cell(text) == written
    assert unescape_cell(written) == text


@pytest.mark.parametrize("text", UNTOUCHED)
def test_plain_text_and_decimal_numbers_are_written_as_they_are(text):
    assert escape_cell(text) == text
    assert unescape_cell(text) == text


@pytest.mark.parametrize("value", [-1.5, -3, np.float64(-2.0), None, True, [-1, "=x"]])
def test_values_that_are_not_text_are_never_touched(value):
    assert escape_cell(value) is value


@given(st.text(alphabet=st.sampled_from(list("'=+-@\t\r1.eax ")), max_size=8) | st.text())
def test_every_text_reads_back_as_it_was_and_is_safe_once_written(text):
    written = escape_cell(text)
    assert unescape_cell(written) == text
    # what a spreadsheet sees first is a quote, or no trigger at all (or a plain number)
    assert written.startswith("'") or not needs_escape(written)


def test_a_table_keeps_its_numeric_columns_and_escapes_its_text_cells():
    table = pd.DataFrame(
        {
            "name": ["=cmd", "aten::add", "'@q", None],
            "delta_us (trace2 - trace1)": [-250.0, -1.5, 3.0, np.nan],
            "mixed": [-2.0, "-x", 7, "ok"],
            "op category": pd.Series(["@cat", "GEMM", "GEMM", "GEMM"], dtype="category"),
            "+col": [1, 2, 3, 4],
        }
    )
    escaped = escape_frame(table)
    assert list(escaped["name"].iloc[:3]) == ["'=cmd", "aten::add", "''@q"]
    assert pd.isna(escaped["name"].iloc[3])
    pd.testing.assert_series_equal(
        escaped["delta_us (trace2 - trace1)"], table["delta_us (trace2 - trace1)"]
    )
    assert list(escaped["mixed"]) == [-2.0, "'-x", 7, "ok"]
    assert list(escaped["op category"]) == ["'@cat", "GEMM", "GEMM", "GEMM"]
    assert list(escaped.columns)[-1] == "'+col"
    assert table["name"].iloc[0] == "=cmd"  # the caller's table is left as it was

    text = table_csv(table)
    lines = text.splitlines()
    assert lines[1].startswith("'=cmd,-250.0,-2.0,'@cat,1")
    read = list(csv.reader(io.StringIO(text, newline="")))
    assert unescape_row(read[0]) == [str(c) for c in table.columns]
    assert unescape_row(read[3])[:3] == ["'@q", "3.0", "7"]


def test_raw_cells_are_written_as_they_are():
    table = pd.DataFrame({"name": ["=cmd", "'@q"], "t": [-1.5, 2.0]})
    assert table_csv(table, RAW) == "name,t\n=cmd,-1.5\n'@q,2.0\n"


@pytest.mark.parametrize("cells", ["escaped", "raw"])
def test_a_carriage_return_in_a_cell_never_starts_a_new_row(tmp_path, cells):
    """Unquoted, the CR would end the row and put `=1+1` at the start of the next one."""
    table = pd.DataFrame({"name": ["\r=1+1 x", "a\rb"], "t": [1.0, 2.0]})
    (path,) = write_csv_folder({"k": table}, tmp_path, cells=cells)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert len(rows) == 3 and {len(r) for r in rows} == {2}
    first = rows[1][0]
    assert first == ("'\r=1+1 x" if cells == "escaped" else "\r=1+1 x")
    assert rows[2] == ["a\rb", "2.0"]
