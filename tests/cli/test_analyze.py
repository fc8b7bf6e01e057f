"""`rooflens report` and `rooflens platforms`: files written, hand-counted GFLOPS, exit codes.

The trace: aten::mm (1024×512) @ (512×2048) in bf16 launching one 40 µs GEMM kernel, and an
unmodelled op launching a 5 µs elementwise kernel. Hand count: 2·1024·2048·512 FLOPs =
2.147483648 GFLOPS; (1024·512 + 512·2048 + 1024·2048)·2 bytes = 7.0 MiB.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rooflens.cli.main import main
from tests.helpers.perf_report_files import CSVS
from tests.helpers.trace_builder import TraceBuilder

BF16 = "c10::BFloat16"
MM_ARGS = {"Input Dims": [[1024, 512], [512, 2048]], "Input type": [BF16, BF16]}
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    tb = TraceBuilder(tmp_path)
    return tb.write(
        [
            tb.cpu_op("aten::mm", 0, 30, args=MM_ARGS),
            *tb.launch(1, 5, 100, 40, kernel_name="gemm_kernel"),
            tb.cpu_op("my::custom_op", 50, 10),
            *tb.launch(2, 52, 200, 5, kernel_name=ELEMENTWISE),
        ]
    )


def rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as f:
        return {r["name"]: r for r in csv.DictReader(f)}


def test_report_writes_every_csv_and_the_workbook(trace, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(trace), "--platform", "MI300X", "--out", str(out)]) == 0
    folder = out / "perf_report_csvs"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.csv" for n in CSVS)
    assert (out / "perf_report.xlsx").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "Scored against platform MI300X." in printed
    assert "Kernel time with a roofline: 88.9 %" in printed  # 40 of 45 µs

    unified = rows(folder / "unified_perf_summary.csv")
    mm = unified["aten::mm"]
    assert float(mm["GFLOPS"]) == pytest.approx(2.147483648, rel=1e-12)
    assert float(mm["Data Moved (MB)"]) == pytest.approx(7.0, rel=1e-12)
    assert mm["Compute Spec"] == "matrix_bf16"
    # MI300X measured roof 708 TFLOPS bf16, 5300 GB/s: compute 3.0331 µs > memory 1.3849 µs
    assert mm["Roofline Bound"] == "COMPUTE_BOUND"
    roofline_us = 2.147483648e9 / 708e12 * 1e6
    assert float(mm["Roofline Time (µs)_first"]) == pytest.approx(roofline_us)
    assert float(mm["Pct Roofline_mean"]) == pytest.approx(roofline_us / 40 * 100)
    assert json.loads(mm["Input Dims"]) == [[1024, 512], [512, 2048]]
    assert unified["my::custom_op"]["GFLOPS"] == ""
    assert unified["my::custom_op"]["has_perf_model"] == "False"

    by_category = rows(folder / "ops_summary.csv")
    assert json.loads(by_category["aten::mm"]["Categories"]) == ["GEMM"]


def test_report_without_a_platform_omits_the_roofline(trace, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(trace), "--out", str(out)]) == 0
    assert "no platform" in capsys.readouterr().out
    mm = rows(out / "perf_report_csvs" / "unified_perf_summary.csv")["aten::mm"]
    assert float(mm["GFLOPS"]) == pytest.approx(2.147483648)
    assert "Pct Roofline_mean" not in mm


def test_unknown_platform_exits_2_listing_the_known_names(trace, tmp_path, capsys):
    code = main(["report", str(trace), "--platform", "NOPE", "--out", str(tmp_path / "o")])
    assert code == 2
    err = capsys.readouterr().err
    assert "NOPE" in err
    assert "MI300X" in err and "H100_SXM" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("platform", "field"),
    [
        ({"name": "X", "mem_bw_gbps": -5, "peak_tflops": {"matrix_bf16": 100}}, "mem_bw_gbps"),
        ({"name": "X", "mem_bw_gbps": 100, "peak_tflops": {"matrix_bf17": 1}}, "matrix_bf17"),
        ({"name": "X", "peak_tflops": {"matrix_bf16": 100}}, "mem_bw_gbps"),
    ],
)
def test_bad_platform_file_exits_2_naming_the_field(trace, tmp_path, capsys, platform, field):
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(platform))
    code = main(["report", str(trace), "--platform-file", str(path), "--out", str(tmp_path)])
    assert code == 2
    err = capsys.readouterr().err
    assert str(path) in err
    assert field in err


def test_platform_file_is_used_for_the_roofline(trace, tmp_path, capsys):
    path = tmp_path / "gpu.json"
    path.write_text(
        json.dumps({"name": "Toy", "mem_bw_gbps": 1000, "peak_tflops": {"matrix_bf16": 200}})
    )
    out = tmp_path / "report"
    assert main(["report", str(trace), "--platform-file", str(path), "--out", str(out)]) == 0
    mm = rows(out / "perf_report_csvs" / "unified_perf_summary.csv")["aten::mm"]
    # compute 10.73741824 µs > memory 7.340032 µs
    assert float(mm["Roofline Time (µs)_first"]) == pytest.approx(10.73741824)


def test_user_categories_reach_the_tables(trace, tmp_path):
    path = tmp_path / "cats.toml"
    path.write_text('[categories.MyCustom]\nops = ["my::custom_op"]\n')
    out = tmp_path / "report"
    assert main(["report", str(trace), "--categories", str(path), "--out", str(out)]) == 0
    unified = rows(out / "perf_report_csvs" / "unified_perf_summary.csv")
    assert unified["my::custom_op"]["op category"] == "MyCustom"
    with (out / "perf_report_csvs" / "ops_summary_by_category.csv").open() as f:
        assert {r["op category"] for r in csv.DictReader(f)} == {"GEMM", "MyCustom"}


def test_bad_categories_file_exits_2_naming_the_file(trace, tmp_path, capsys):
    path = tmp_path / "cats.toml"
    path.write_text('[[patterns]]\nregex = "("\ncategory = "x"\n')
    assert main(["report", str(trace), "--categories", str(path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "patterns[0]" in err


def test_missing_trace_exits_2(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["report", str(missing), "--platform", "MI300X", "--out", str(tmp_path)]) == 2
    assert "rooflens:" in capsys.readouterr().err


def test_platform_and_platform_file_are_exclusive(trace, tmp_path):
    both = ["--platform", "MI300X", "--platform-file", "x.json"]
    with pytest.raises(SystemExit) as caught:
        main(["report", str(trace), *both, "--out", str(tmp_path)])
    assert caught.value.code == 2


def test_platforms_lists_the_catalogue(capsys):
    assert main(["platforms"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines[1:]]
    assert "MI300X" in names and "H100_SXM" in names
    mi300x = next(line for line in lines if line.startswith("MI300X "))
    assert "AMD" in mi300x and "5300" in mi300x and "708" in mi300x
    assert lines[0].split()[:2] == ["name", "vendor"]
    rtx = next(line for line in lines if line.startswith("RTX_2080_Ti "))
    assert rtx.split()[1] == "NVIDIA"  # the longest name keeps its own column


@pytest.mark.slow
def test_analyze_prepares_the_category_data_with_relative_paths(trace, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--platform", "MI300X", "--out", str(out)]) == 0
    manifest = json.loads((out / "category_data/category_manifest.json").read_text())
    names = [c["name"] for c in manifest["categories"]]
    # cpu_idle first; the 40 µs GEMM before the 5 µs elementwise op; no copies or collectives
    assert names == ["cpu_idle", "gemm", "elementwise"]
    gemm = manifest["categories"][1]
    assert gemm["csv_file"] == "category_data/gemm_ops.csv"
    assert gemm["gpu_kernel_time_ms"] == 0.04
    assert (out / gemm["csv_file"]).is_file() and (out / gemm["metadata_file"]).is_file()
    assert [op["name"] for op in manifest["top_operations"]] == ["aten::mm", "my::custom_op"]
    kernels = json.loads((out / "category_data/multi_kernel_data.json").read_text())
    assert kernels["memcpy_summary"]["total_count"] == 0
    printed = capsys.readouterr().out
    assert "Prepared 3 categories" in printed
    priorities = json.loads((out / "priority_data.json").read_text())
    assert priorities["baseline_ms"] > 0
    assert "Priorities (estimated saving" in printed


@pytest.mark.slow
def test_validate_passes_on_an_analysed_run_and_fails_on_a_broken_finding(trace, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--platform", "MI300X", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    assert "All checks passed." in capsys.readouterr().out
    finding = out / "category_findings/gemm_findings.md"
    finding.write_text(finding.read_text().replace("## Recommendations", "## Recs"))
    assert main(["validate", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "category_findings/gemm_findings.md: line" in printed
    assert "Some checks failed" in printed


def test_validate_refuses_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert main(["validate", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
