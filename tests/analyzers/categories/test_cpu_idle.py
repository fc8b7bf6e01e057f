"""cpu_idle_metrics (agent_workflow.md §3.12.1): hand-computed cases and threshold edges."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.cpu_idle import (
    IDLE_THRESHOLD_PERCENT,
    CpuIdleMetrics,
    analyze_cpu_idle,
)
from rooflens.analyzers.categories.system_inputs import SystemInputs, Timeline
from rooflens.analyzers.pipeline.folder import RunFolder
from tests.helpers.pipeline_runs import manifest, system_inputs


def make_run(
    idle: float, total: float = 200.0, timeline: str | None = None, scope: str = "standalone"
) -> SystemInputs:
    """The manifest's GPU utilisation, and the perf report's gpu_timeline when given."""
    busy = 100.0 - idle
    util = {
        "total_time_ms": total,
        "computation_time_percent": busy - 3.0,
        "exposed_comm_time_percent": 2.0,
        "exposed_memcpy_time_percent": 1.0,
        "idle_time_percent": idle,
    }
    sheet = None if timeline is None else pd.read_csv(io.StringIO(timeline))
    return system_inputs(manifest(util, scope=scope), timeline=sheet)


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
def test_idle_flag_is_strictly_above_15(idle: float, flagged: bool) -> None:
    doc = analyze_cpu_idle(make_run(idle))
    assert doc.status == "OK"
    assert doc.idle_flagged is flagged


def test_flag_uses_unrounded_percent() -> None:
    doc = analyze_cpu_idle(make_run(15.004))
    assert doc.gpu_utilization is not None
    assert doc.gpu_utilization.idle_time_percent == 15.0  # shown rounded
    assert doc.idle_flagged is True  # judged unrounded


def test_document_from_manifest() -> None:
    # total 123.4567 ms, idle 8.5604 % -> 10.56829... ms
    run = make_run(8.5604, total=123.4567)
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


def test_report_timeline_preferred_and_exposed_comm_used() -> None:
    util = analyze_cpu_idle(make_run(1.0, timeline=TIMELINE)).model_dump()["gpu_utilization"]
    assert util == {
        "total_time_ms": 10.0,
        "idle_time_ms": 2.5,
        "idle_time_percent": 25.0,
        "computation_percent": 60.0,
        "communication_percent": 10.0,  # exposed, not total communication
        "memcpy_percent": 5.0,
    }


def test_comparative_manifest_still_uses_the_analysed_trace_timeline() -> None:
    """The timeline is the perf report's of the trace analysed (TraceLens: trace1's CSVs);
    the manifest's 1 % idle is not read when it is there."""
    doc = analyze_cpu_idle(make_run(1.0, timeline=TIMELINE, scope="comparative"))
    assert doc.gpu_utilization is not None and doc.gpu_utilization.idle_time_percent == 25.0
    assert doc.idle_flagged is True


def test_no_gpu_time_gives_error_document() -> None:
    doc = analyze_cpu_idle(system_inputs(manifest()))  # no timeline, total 0 ms
    dumped = doc.model_dump(mode="json")
    assert list(dumped) == ["status", "error"]
    assert dumped["status"] == "ERROR" and "no GPU time" in dumped["error"]


@pytest.mark.parametrize(
    "content", ["{not json", "[]", json.dumps({"gpu_utilization": {"idle_time_percent": 3}})]
)
def test_unusable_manifest_is_not_read_back(tmp_path: Path, content: str) -> None:
    (tmp_path / "category_data").mkdir()
    (tmp_path / layout.MANIFEST).write_text(content)
    assert RunFolder(tmp_path).read_manifest() is None


def test_timeline_without_total_row_falls_back_to_the_manifest() -> None:
    no_total = "\n".join(ln for ln in TIMELINE.splitlines() if not ln.startswith("total_time"))
    assert Timeline.from_sheet(pd.read_csv(io.StringIO(no_total))) is None
    doc = analyze_cpu_idle(make_run(20.0, total=50.0, timeline=no_total))
    assert doc.gpu_utilization is not None
    assert (doc.gpu_utilization.total_time_ms, doc.gpu_utilization.idle_time_ms) == (50.0, 10.0)
    assert doc.idle_flagged is True


def test_write_metrics_is_atomic_and_overwrites(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path / "out")
    first = CpuIdleMetrics(status="ERROR", error="x")
    target = folder.write_metrics("cpu_idle", first)
    assert target == tmp_path / "out" / layout.metrics("cpu_idle")
    second = analyze_cpu_idle(make_run(20.0))
    assert folder.write_metrics("cpu_idle", second) == target
    assert json.loads(target.read_text()) == second.model_dump(mode="json")
    assert [p.name for p in target.parent.iterdir()] == ["cpu_idle_metrics.json"]
