"""cpu_idle_metrics (agent_workflow.md §3.12.1): hand-computed cases and threshold edges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import (
    IDLE_THRESHOLD_PERCENT,
    CpuIdleMetrics,
    analyze_cpu_idle,
)
from rooflens.analyzers.categories.system_inputs import write_metrics


def make_run(tmp_path: Path, idle: float, total: float = 200.0, **extra: object) -> Path:
    busy = 100.0 - idle
    util = {
        "total_time_ms": total,
        "computation_time_percent": busy - 3.0,
        "exposed_comm_time_percent": 2.0,
        "exposed_memcpy_time_percent": 1.0,
        "idle_time_percent": idle,
    }
    (tmp_path / "category_data").mkdir(parents=True, exist_ok=True)
    manifest = {"comparison_scope": "standalone", "gpu_utilization": util, **extra}
    (tmp_path / "category_data/category_manifest.json").write_text(json.dumps(manifest))
    return tmp_path


TIMELINE = """type,time ms,percent
computation_time,6.0,60.0
exposed_comm_time,1.0,10.0
exposed_memcpy_time,0.5,5.0
busy_time,7.5,75.0
idle_time,2.5,25.0
total_time,10.0,100.0
total_comm_time,2.0,20.0
total_memcpy_time,0.5,5.0
"""


def test_threshold_constant() -> None:
    assert IDLE_THRESHOLD_PERCENT == 15


@pytest.mark.parametrize(
    ("idle", "flagged"), [(15.0, False), (14.99, False), (15.0001, True), (86.27, True)]
)
def test_idle_flag_is_strictly_above_15(tmp_path: Path, idle: float, flagged: bool) -> None:
    doc = analyze_cpu_idle(make_run(tmp_path, idle))
    assert doc.status == "OK"
    assert doc.idle_flagged is flagged


def test_flag_uses_unrounded_percent(tmp_path: Path) -> None:
    doc = analyze_cpu_idle(make_run(tmp_path, 15.004))
    assert doc.gpu_utilization is not None
    assert doc.gpu_utilization.idle_time_percent == 15.0  # shown rounded
    assert doc.idle_flagged is True  # judged unrounded


def test_document_from_manifest(tmp_path: Path) -> None:
    # total 123.4567 ms, idle 8.5604 % -> 10.56829... ms
    run = make_run(tmp_path, 8.5604, total=123.4567)
    assert analyze_cpu_idle(run).model_dump(mode="json") == {
        "status": "OK",
        "idle_flagged": False,
        "gpu_utilization": {
            "total_time_ms": 123.457,
            "idle_time_ms": 10.568,
            "idle_time_percent": 8.56,
            "computation_percent": 88.44,
            "communication_percent": 2.0,
            "memcpy_percent": 1.0,
        },
        "kernel_analysis": {
            "short_kernel_count": 0,
            "total_kernel_count": 0,
            "avg_kernel_time_us": 0,
            "kernel_count_by_category": {},
        },
        "impact_estimates": [],
    }


def test_csv_timeline_preferred_and_exposed_comm_used(tmp_path: Path) -> None:
    run = make_run(tmp_path, 1.0)
    (run / "perf_report_csvs").mkdir()
    (run / "perf_report_csvs/gpu_timeline.csv").write_text(TIMELINE)
    util = analyze_cpu_idle(run).model_dump()["gpu_utilization"]
    assert util == {
        "total_time_ms": 10.0,
        "idle_time_ms": 2.5,
        "idle_time_percent": 25.0,
        "computation_percent": 60.0,
        "communication_percent": 10.0,  # exposed, not total communication
        "memcpy_percent": 5.0,
    }


def test_comparative_reads_trace1_csvs(tmp_path: Path) -> None:
    run = make_run(tmp_path, 1.0, comparison_scope="comparative")
    (run / "perf_report_csvs").mkdir()
    (run / "perf_report_csvs/gpu_timeline.csv").write_text(TIMELINE.replace("25.0", "99.0"))
    (run / "perf_report_trace1_csvs").mkdir()
    (run / "perf_report_trace1_csvs/gpu_timeline.csv").write_text(TIMELINE)
    doc = analyze_cpu_idle(run)
    assert doc.gpu_utilization is not None and doc.gpu_utilization.idle_time_percent == 25.0
    assert doc.idle_flagged is True


def test_missing_inputs_give_error_document(tmp_path: Path) -> None:
    doc = analyze_cpu_idle(tmp_path)
    dumped = doc.model_dump(mode="json")
    assert list(dumped) == ["status", "error"]
    assert dumped["status"] == "ERROR" and "not found" in dumped["error"]


@pytest.mark.parametrize(
    "content", ["{not json", "[]", json.dumps({"gpu_utilization": {"idle_time_percent": 3}})]
)
def test_unusable_manifest_gives_error_document(tmp_path: Path, content: str) -> None:
    (tmp_path / "category_data").mkdir()
    (tmp_path / "category_data/category_manifest.json").write_text(content)
    doc = analyze_cpu_idle(tmp_path)
    assert doc.status == "ERROR" and doc.error


def test_bad_csv_gives_error_document(tmp_path: Path) -> None:
    run = make_run(tmp_path, 1.0)
    (run / "perf_report_csvs").mkdir()
    (run / "perf_report_csvs/gpu_timeline.csv").write_text("type,percent\nidle_time,3\n")
    assert analyze_cpu_idle(run).status == "ERROR"


def test_write_metrics_is_atomic_and_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "out/cpu_idle_metrics.json"
    first = CpuIdleMetrics(status="ERROR", error="x")
    write_metrics(target, first)
    second = analyze_cpu_idle(make_run(tmp_path / "run", 20.0))
    write_metrics(target, second)
    assert json.loads(target.read_text()) == second.model_dump(mode="json")
    assert [p.name for p in target.parent.iterdir()] == ["cpu_idle_metrics.json"]
