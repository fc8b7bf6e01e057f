"""The workbook prints and reads: page setup on every sheet, the roofline figures after the
name with their colour scale, shapes in the summary's top operations, trace text never a
formula. Written from a generated trace; opened with openpyxl (no office suite in CI)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from openpyxl import load_workbook
from openpyxl.utils import column_index_from_string
from openpyxl.utils.cell import coordinate_from_string
from openpyxl.worksheet.worksheet import Worksheet

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import write_perf_report
from rooflens.analyzers.synthetic.devices import MI300X
from rooflens.analyzers.synthetic.writer import Writer
from rooflens.analyzers.trace.open_trace import open_trace

BF16 = "c10::BFloat16"
BN_BWD = "aten::native_batch_norm_backward"
# one batch-norm backward at three shapes: three rows of one name in the top operations
BN_SHAPES = ([8, 64, 56, 56], [8, 128, 28, 28], [8, 256, 14, 14])
HOSTILE = (
    '=HYPERLINK("http://evil.example/x","open")',
    "+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
)
ROOFLINE_LEAD = ["name", "Pct Roofline_mean", "TFLOPS/s_mean", "TB/s_mean"]


def _batch_norm_args(shape: list[int]) -> dict:
    c = shape[1]
    dims = [shape, shape, [c], [c], [c], [c], [c]]
    return {"Input Dims": dims, "Input type": [BF16] * 2 + ["float"] * 5}


@pytest.fixture(scope="module")
def workbook_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("xlsx_print")
    w = Writer(device=MI300X, host_pid=100, main_tid=100, vendor="amd")
    t = 0.0
    for repeat in range(3):
        for i, shape in enumerate(BN_SHAPES):
            w.launching_op(
                BN_BWD, "batchnorm_bwd_kernel", t, 40.0 - 10 * i + repeat,
                op_args=_batch_norm_args(shape),
            )  # fmt: skip
            t += 60.0
    for i, name in enumerate(HOSTILE):
        args = {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": [BF16, BF16]}
        w.launching_op(name, f"Cijk_Alik_Bljk_{i}", t, 30.0, op_args=args)
        t += 50.0
    trace = w.write(folder / "trace.json", "generated")
    report = build_report(open_trace(trace), get_platform("MI300X"))
    files = write_perf_report(report, folder / "run", trace.name, "AMD Instinct MI300X")
    return files.xlsx


@pytest.fixture(scope="module")
def book(workbook_path: Path):
    return load_workbook(workbook_path)


def _header(ws: Worksheet) -> list:
    return [c.value for c in ws[1]]


def test_every_sheet_prints_landscape_one_page_wide_with_its_header_on_every_page(book):
    assert book.sheetnames[0] == "summary" and len(book.sheetnames) == 7
    for ws in book.worksheets:
        assert ws.page_setup.orientation == "landscape", ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert (ws.page_setup.fitToWidth, ws.page_setup.fitToHeight) == (1, 0), ws.title
        assert ws.print_title_rows == "$1:$1", ws.title
        assert ws.freeze_panes == ("A2" if ws.title == "summary" else "B2"), ws.title


def test_the_roofline_figures_follow_the_name_and_carry_the_colour_scale(book):
    ws = book["unified_perf_summary"]
    header = _header(ws)
    assert header[:4] == ROOFLINE_LEAD
    assert len(header) == len(set(header)) > 40  # every other column is still there, once
    scaled = {str(r.sqref): [rule.type for rule in r.rules] for r in ws.conditional_formatting}
    assert scaled[f"B2:B{ws.max_row}"] == ["colorScale"]  # on screen, beside the name
    letters = [coordinate_from_string(ref.split(":")[0])[0] for ref in scaled]
    columns = [header[column_index_from_string(letter) - 1] for letter in letters]
    assert all(c.startswith("Pct Roofline") for c in columns) and len(columns) == 5
    # the percent in B is the per-signature mean: TFLOPS/s in C, TB/s in D
    assert ws["B2"].number_format == "0.00" and ws["C2"].number_format == "#,##0.000"


def test_the_csv_keeps_tracelens_column_order(workbook_path: Path):
    csv = workbook_path.parent / "perf_report_csvs" / "unified_perf_summary.csv"
    header = csv.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[0] == "name" and header[1] == "op category"
    assert header.index("Pct Roofline_mean") > header.index("TFLOPS/s_mean") > 20


def test_the_summary_top_operations_carry_their_shapes(book):
    rows = [[c.value for c in row] for row in book["summary"].iter_rows()]
    top = next(i for i, r in enumerate(rows) if r[0] == "Top operations by GPU time")
    header = rows[top + 1]
    assert header[:5] == [*ROOFLINE_LEAD, "Input Dims"]
    ops = []
    for row in rows[top + 2 :]:
        if row[0] is None:
            break
        ops.append(row)
    dims = [r[4] for r in ops if r[0] == BN_BWD]
    assert len(dims) == 3 and len(set(dims)) == 3  # three signatures, no longer look alike
    assert [json.loads(d)[0] for d in dims] == list(BN_SHAPES)  # by kernel time, longest first
    scaled = {str(r.sqref) for r in book["summary"].conditional_formatting}
    first = top + 3  # 1-based row of the first top operation
    assert f"B{first}:B{first + len(ops) - 1}" in scaled


def test_trace_names_that_look_like_formulas_are_text_cells(book, workbook_path: Path):
    cells = {
        c.value: c
        for ws in book.worksheets
        for row in ws.iter_rows()
        for c in row
        if isinstance(c.value, str)
    }
    for name in HOSTILE:
        assert cells[name].data_type == "s", name  # the name as the trace wrote it, as text
    with zipfile.ZipFile(workbook_path) as archive:
        sheets = [n for n in archive.namelist() if n.startswith("xl/worksheets/")]
        assert not any(b"<f>" in archive.read(n) or b"<f " in archive.read(n) for n in sheets)
