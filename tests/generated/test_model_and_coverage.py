"""Model identification and roofline coverage on generated traces (the counterparts of
golden test_model_identification.py and test_roofline_coverage.py).

Planted: hidden size 1024 (every linear reads or writes it), one attention op per block, bf16
everywhere, and only ops the perf models cover, so every attributed kernel has a roofline.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from rooflens.analyzers.findings.composing.model_info import model_identification, op_rows
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.synthetic.sample import H
from rooflens.analyzers.trace.open_trace import open_trace
from tests.helpers.golden import REPO
from tests.helpers.sample_traces import gpu_only, write_document, write_variant


@pytest.mark.parametrize("layers", [1, 3, 5])
def test_hidden_size_layers_and_precision_are_read_from_the_shapes(tmp_path: Path, layers: int):
    trace = write_variant(tmp_path / "sample.json.gz", layers=layers)
    report = build_report(open_trace(trace), get_platform("MI300X"))
    rows = op_rows(report.sheets["unified_perf_summary"])
    assert rows is not None
    info = model_identification(rows)
    assert (info.hidden_size, info.num_layers, info.precision) == (H, layers, "bf16")
    assert f"{layers} attention op(s)" in " ".join(info.evidence)
    assert roofline_coverage(report) == 1.0


@pytest.fixture(scope="module")
def coverage() -> ModuleType:
    path = REPO / "benchmarks" / "roofline_coverage.py"
    spec = importlib.util.spec_from_file_location("roofline_coverage", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_coverage_benchmark_measures_a_folder_of_generated_traces(
    tmp_path: Path, coverage: ModuleType
) -> None:
    traces = tmp_path / "traces"
    write_variant(traces / "sample/seed0.json.gz")
    write_variant(traces / "sample/seed1.json", seed=1, layers=1)
    write_variant(traces / "gpu_only/trace.json.gz", gpu_only)
    write_document({"batch_size": 8}, traces / "sample/execution_details.json")  # a sidecar
    write_document({"traceEvents": [{"name": "x"}]}, traces / "broken/not_a_trace.json")
    rows = {r["trace"]: r for r in coverage.measure_all(tmp_path)}
    assert sorted(rows) == ["gpu_only/trace.json.gz", "sample/seed0.json.gz", "sample/seed1.json"]
    for name in ("sample/seed0.json.gz", "sample/seed1.json"):
        assert rows[name]["ours_pct"] == 100.0 and rows[name]["uncovered"] == []
        assert (rows[name]["platform"], rows[name]["shapes"]) == ("MI300X", True)
        assert rows[name]["reference"] is None and rows[name]["tracelens_pct"] is None
    assert rows["gpu_only/trace.json.gz"]["shapes"] is False
    summary = coverage.summarise(list(rows.values()))
    assert summary["shaped_traces"] == 2 and summary["shaped_mean"] == 100.0
    assert summary["mean_pass"] and summary["min_pass"] and summary["below_min"] == []
    assert summary["reference_traces"] == 0
