"""Trace text in the XLSX: characters a worksheet cannot hold are replaced, long text is cut."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from openpyxl import load_workbook

from rooflens.analyzers.report.write_xlsx import write_xlsx
from rooflens.analyzers.report.xlsx_cells import EXCEL_CELL_CHARS, shown_text, xlsx_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("aten::mm\x00evil", "aten::mm\ufffdevil"),
        ("\x01\x08\x0b\x0c\x0e\x1f", "\ufffd" * 6),
        ("tab\tline\nreturn\r", "tab\tline\nreturn\r"),  # the controls XML allows stay
        ("\ufffe\uffff", "\ufffd\ufffd"),  # XML non-characters
        ("x\ud800y", "x\ufffdy"),  # a lone surrogate cannot be encoded at all
        ("µs → 😀", "µs → 😀"),
    ],
)
def test_characters_a_worksheet_cannot_hold_become_replacement_characters(text, expected):
    assert xlsx_text(text) == expected


def test_text_longer_than_an_excel_cell_is_cut_with_an_ellipsis():
    cut = xlsx_text("k" * 40_000)
    assert len(cut) == EXCEL_CELL_CHARS
    assert cut.endswith("k…")
    assert xlsx_text("k" * EXCEL_CELL_CHARS) == "k" * EXCEL_CELL_CHARS


def test_a_workbook_with_hostile_names_and_non_finite_numbers_is_written(tmp_path):
    table = pd.DataFrame(
        {
            "name": ["aten::mm\x00evil", "gemm\x07"],
            "Kernel Time (µs)": [np.inf, 2.5],
            "Pct Roofline": [-np.inf, math.nan],
        }
    )
    path = write_xlsx(
        tmp_path / "r.xlsx",
        {"gpu_timeline": pd.DataFrame({"type": ["busy_time"], "percent": [50.0]}), "ops": table},
        title="report: trace\x00.json",
        facts={"Trace": "trace\x01.json", "GPU busy (ms)": math.inf},
        top_ops=table,
        notes=["note\x02"],
    )
    workbook = load_workbook(path)
    rows = list(workbook["ops"].iter_rows(values_only=True))
    assert rows[0] == ("name", "Pct Roofline", "Kernel Time (µs)")  # roofline after the name
    assert rows[1:] == [("aten::mm\ufffdevil", None, None), ("gemm\ufffd", None, 2.5)]
    summary = [c for row in workbook["summary"].iter_rows(values_only=True) for c in row if c]
    assert "report: trace\ufffd.json" in summary
    assert "trace\ufffd.json" in summary
    assert "note\ufffd" in summary


@pytest.mark.parametrize(
    ("value", "fmt", "shown"),
    [
        (153698.4731445312, "#,##0.000", "153,698.473"),  # a column is sized for this
        (46.31994284267673, "0.00", "46.32"),
        (1200, "#,##0", "1,200"),
        ("aten::mm", None, "aten::mm"),
        (True, "0.00", "True"),
    ],
)
def test_a_column_is_sized_for_its_numbers_as_shown(value, fmt, shown):
    assert shown_text(value, fmt) == shown
