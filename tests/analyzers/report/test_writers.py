"""CSV folder and XLSX workbook writers: JSON in structured cells, atomic files, styled sheets."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report import write_csv
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import write_perf_report
from rooflens.analyzers.report.write_csv import cell_text, write_csv_folder
from rooflens.analyzers.report.xlsx_cells import number_format

BF16 = "c10::BFloat16"
MM_ARGS = {"Input Dims": [[1024, 512], [512, 2048]], "Input type": [BF16, BF16]}
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"
TABLE_SHEETS = [
    "gpu_timeline",
    "ops_summary_by_category",
    "ops_summary",
    "ops_unique_args",
    "unified_perf_summary",
    "kernel_summary",
]


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --- CSV -----------------------------------------------------------------------------------


def test_structured_cells_are_json_that_round_trips(tmp_path):
    frame = pd.DataFrame(
        {
            "name": ["aten::mm"],
            "kernel_details_summary": [
                [{"name": "k", "stream": np.int64(7), "mean_duration_us": np.float64(1.5)}]
            ],
            "perf_params": [{"M": np.int64(4), "bias": np.bool_(False), "dtype_A_B": ("a", "b")}],
            "Input Dims": [((4, 8), (8, 2))],
            "GFLOPS": [np.float64(0.25)],
        }
    )
    (path,) = write_csv_folder({"table": frame}, tmp_path / "csvs")
    assert path == tmp_path / "csvs" / "table.csv"
    text = path.read_text(encoding="utf-8")
    assert "np.float64" not in text
    assert "np." not in text
    (row,) = read_csv(path)
    assert json.loads(row["kernel_details_summary"]) == [
        {"name": "k", "stream": 7, "mean_duration_us": 1.5}
    ]
    assert json.loads(row["perf_params"]) == {"M": 4, "bias": False, "dtype_A_B": ["a", "b"]}
    assert json.loads(row["Input Dims"]) == [[4, 8], [8, 2]]
    assert row["name"] == "aten::mm"
    assert float(row["GFLOPS"]) == 0.25


def test_cell_text_leaves_scalars_alone():
    assert cell_text("aten::mm") == "aten::mm"
    assert cell_text(3) == 3
    assert cell_text(None) is None
    assert cell_text([1, 2]) == "[1, 2]"


def test_csv_writes_leave_no_temporary_files_and_replace_old_ones(tmp_path):
    folder = tmp_path / "csvs"
    write_csv_folder({"a": pd.DataFrame({"x": [1]}), "b": pd.DataFrame({"y": [2]})}, folder)
    write_csv_folder({"a": pd.DataFrame({"x": [3]})}, folder)
    assert sorted(os.listdir(folder)) == ["a.csv", "b.csv"]
    assert read_csv(folder / "a.csv") == [{"x": "3"}]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path, monkeypatch):
    folder = tmp_path / "csvs"
    write_csv_folder({"a": pd.DataFrame({"x": [1]})}, folder)

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(write_csv.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_csv_folder({"a": pd.DataFrame({"x": [2]})}, folder)
    assert os.listdir(folder) == ["a.csv"]
    assert read_csv(folder / "a.csv") == [{"x": "1"}]


# --- a whole report ------------------------------------------------------------------------


@pytest.fixture
def files(tb, tmp_path):
    model = tb.model(
        [
            tb.cpu_op("aten::mm", 0, 30, args=MM_ARGS),
            *tb.launch(1, 5, 100, 40, kernel_name="gemm_kernel"),
            tb.cpu_op("aten::mm", 40, 20, args=MM_ARGS),
            *tb.launch(2, 45, 200, 80, kernel_name="gemm_kernel"),
            tb.cpu_op("my::custom_op", 70, 10),
            *tb.launch(3, 72, 300, 5, kernel_name=ELEMENTWISE),
        ]
    )
    report = build_report(model, get_platform("MI300X"))
    return write_perf_report(report, tmp_path / "out", "trace.json", "AMD Instinct MI300X")


def test_report_csv_folder_has_one_file_per_sheet_with_json_cells(files):
    assert [p.name for p in files.csvs] == [f"{s}.csv" for s in TABLE_SHEETS]
    assert sorted(os.listdir(files.csv_folder)) == sorted(f"{s}.csv" for s in TABLE_SHEETS)
    for path in files.csvs:
        assert "np.float64" not in path.read_text(encoding="utf-8")
    rows = read_csv(files.csv_folder / "unified_perf_summary.csv")
    mm = next(r for r in rows if r["name"] == "aten::mm")
    assert json.loads(mm["Input Dims"]) == [[1024, 512], [512, 2048]]
    assert json.loads(mm["perf_params"])["K"] == 512
    (kernel,) = json.loads(mm["kernel_details_summary"])
    assert (kernel["name"], kernel["count"], kernel["total_duration_us"]) == ("gemm_kernel", 2, 120)
    assert isinstance(json.loads(mm["call_stack_full"]), list)
    assert float(mm["GFLOPS"]) == pytest.approx(2.147483648)
    assert not [p for p in files.xlsx.parent.iterdir() if p.name.startswith(".")]


@pytest.fixture
def workbook(files):
    return load_workbook(io.BytesIO(files.xlsx.read_bytes()))


def header(ws) -> list[str]:
    return [c.value for c in ws[1]]


def column_of(ws, name: str) -> str:
    return get_column_letter(header(ws).index(name) + 1)


def test_workbook_opens_with_the_summary_first_then_the_tables(workbook):
    assert workbook.sheetnames == ["summary", *TABLE_SHEETS]
    summary = workbook["summary"]
    assert summary["A1"].value == "rooflens perf report: trace.json"
    facts = {
        summary.cell(row=r, column=1).value: summary.cell(row=r, column=2).value for r in (3, 4)
    }
    assert facts == {"Trace": "trace.json", "GPU": "AMD Instinct MI300X"}


@pytest.mark.parametrize("sheet", TABLE_SHEETS)
def test_every_table_sheet_has_a_frozen_bold_filtered_header_and_sized_columns(workbook, sheet):
    ws = workbook[sheet]
    columns = header(ws)
    assert columns and all(isinstance(c, str) for c in columns)
    assert ws.freeze_panes == "B2"
    assert ws.auto_filter.ref == f"A1:{get_column_letter(len(columns))}{ws.max_row}"
    assert all(cell.font.bold for cell in ws[1])
    # every column is covered by a saved <col> with a custom width (adjacent columns of
    # equal width are saved as one range)
    sized = [d for d in list(ws.column_dimensions.values()) if d.customWidth and d.width > 0]
    for i in range(1, len(columns) + 1):
        assert any(d.min <= i <= d.max for d in sized), get_column_letter(i)


def test_numeric_columns_carry_number_formats(workbook):
    ws = workbook["unified_perf_summary"]
    expected = {
        "Kernel Time (µs)_sum": "#,##0.000",
        "GFLOPS": "#,##0.000",
        "TFLOPS/s_mean": "#,##0.000",
        "Data Moved (MB)": "#,##0.000",
        "operation_count": "#,##0",
        "ex_UID": "#,##0",
        "Pct Roofline_mean": "0.00",
        "Percentage (%)": "0.00",
    }
    for column, fmt in expected.items():
        letter = column_of(ws, column)
        assert [c.number_format for c in ws[letter][1:]] == [fmt] * (ws.max_row - 1), column
    assert ws[f"{column_of(ws, 'name')}2"].number_format == "General"


def test_pct_roofline_columns_have_a_colour_scale(workbook):
    ws = workbook["unified_perf_summary"]
    scaled = {}
    for rng in ws.conditional_formatting:
        for rule in rng.rules:
            scaled[str(rng.sqref)] = rule.type
    letter = column_of(ws, "Pct Roofline_mean")
    assert scaled[f"{letter}2:{letter}{ws.max_row}"] == "colorScale"
    kernel_time = column_of(ws, "Kernel Time (µs)_sum")
    assert not any(key.startswith(kernel_time) for key in scaled)


def test_xlsx_cells_hold_the_same_json_and_numbers(workbook):
    ws = workbook["unified_perf_summary"]
    columns = header(ws)
    rows = [dict(zip(columns, (c.value for c in row), strict=True)) for row in ws.iter_rows(2)]
    mm = next(r for r in rows if r["name"] == "aten::mm")
    assert json.loads(mm["Input Dims"]) == [[1024, 512], [512, 2048]]
    assert mm["Kernel Time (µs)_sum"] == 120
    assert mm["GFLOPS"] == pytest.approx(2.147483648)
    custom = next(r for r in rows if r["name"] == "my::custom_op")
    assert custom["GFLOPS"] is None  # NaN becomes an empty cell


@pytest.mark.parametrize(
    ("column", "fmt"),
    [
        ("Kernel Time (µs)_sum", "#,##0.000"),
        ("total_direct_kernel_time_ms", "#,##0.000"),
        ("time ms", "#,##0.000"),
        ("percent", "0.00"),
        ("Cumulative Percentage (%)", "0.00"),
        ("Count", "#,##0"),
        ("Kernel duration (µs)_count", "#,##0"),
        ("FLOPS/Byte", "#,##0.000"),
        ("TB/s_std", "#,##0.000"),
        ("name", None),
        ("Compute Spec", None),
    ],
)
def test_number_format_by_column_name(column, fmt):
    assert number_format(column) == fmt


def test_atomic_writes_get_the_usual_file_mode_not_mkstemps_0600(tmp_path):
    import os
    import stat

    target = tmp_path / "out.csv"
    write_csv.atomic_write_bytes(target, b"a\n")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
