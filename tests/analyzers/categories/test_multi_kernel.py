"""multi_kernel_metrics (agent_workflow.md §3.12.2, §9): hand-computed cases, threshold edges.

Every run below has a 100 ms GPU total, so a time in ms is also its percent of the total.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.multi_kernel import (
    COMM_EXPOSED_PERCENT_LIMIT,
    CROSS_VALIDATION_TOLERANCE_PERCENT,
    MEMCPY_COUNT_LIMIT,
    MEMCPY_PERCENT_LIMIT,
    NO_TOTAL,
    OVERLAP_MIN_COMM_US,
    OVERLAP_TARGET_RATIO,
    analyze_multi_kernel,
)
from rooflens.analyzers.categories.system_inputs import SystemInputs, Timeline, TimelineRow
from rooflens.analyzers.pipeline.folder import RunFolder
from tests.helpers.pipeline_runs import manifest, system_inputs

TOTAL_US = 100_000.0


def direction(count: int, time_us: float, avg_bytes: float = 64.0) -> dict[str, Any]:
    return {
        "count": count,
        "total_time_us": time_us,
        "avg_time_us": round(time_us / count, 2),
        "max_time_us": time_us,
        "total_bytes": int(avg_bytes * count),
        "avg_bytes": avg_bytes,
    }


def overlap(
    comm_us: float = 0.0, exposed_us: float = 0.0, ratio: float | None = None, **kw: Any
) -> dict[str, Any]:
    return {
        "total_time_us": TOTAL_US,
        "computation_time_us": 60_000.0,
        "total_comm_time_us": comm_us,
        "exposed_comm_time_us": exposed_us,
        "total_memcpy_time_us": 0,
        "exposed_memcpy_time_us": 0,
        "comm_overlap_ratio": ratio,
        "memcpy_overlap_ratio": None,
        "comm_percent_of_total": round(exposed_us / TOTAL_US * 100, 2),
        "memcpy_percent_of_total": 0.0,
        **kw,
    }


def make_run(
    by_direction: dict[str, Any] | None = None,
    nccl_count: int = 0,
    ovl: dict[str, Any] | None = None,
    computation_percent: float = 60.0,
) -> SystemInputs:
    by_direction = by_direction or {}
    data = {
        "memcpy_summary": {
            "total_count": sum(d["count"] for d in by_direction.values()),
            "total_time_us": sum(d["total_time_us"] for d in by_direction.values()),
            "by_direction": by_direction,
        },
        "nccl_summary": {"total_count": nccl_count, "total_time_us": 0},
        "overlap_analysis": ovl if ovl is not None else overlap(),
    }
    util = {
        "total_time_ms": TOTAL_US / 1000,
        "computation_time_percent": computation_percent,
        "exposed_comm_time_percent": 0.0,
        "exposed_memcpy_time_percent": 0.0,
        "idle_time_percent": 100 - computation_percent,
    }
    return system_inputs(manifest(util), multi_kernel=data)


def dump(run: SystemInputs) -> dict[str, Any]:
    return analyze_multi_kernel(run).model_dump(mode="json")


def test_constants_match_section_9() -> None:
    assert MEMCPY_PERCENT_LIMIT == 5 and MEMCPY_COUNT_LIMIT == 10
    assert COMM_EXPOSED_PERCENT_LIMIT == 5
    assert OVERLAP_TARGET_RATIO == 0.70 and OVERLAP_MIN_COMM_US == 100
    assert CROSS_VALIDATION_TOLERANCE_PERCENT == 2


# --- memcpy -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "time_us", "flagged"),
    [
        (10, 5_000.0, False),  # exactly 10 transfers, exactly 5 %: neither rule fires
        (11, 100.0, True),  # count > 10
        (1, 5_001.0, True),  # 5.001 % > 5 %
        (1, 4_999.0, False),
    ],
)
@pytest.mark.parametrize("name", ["D2H", "H2D"])
def test_memcpy_direction_edges(name: str, count: int, time_us: float, flagged: bool) -> None:
    doc = dump(make_run({name: direction(count, time_us)}))
    assessment = doc["memcpy_assessment"]
    assert assessment["flagged"] is flagged
    assert [i["direction"] for i in assessment["issues"]] == ([name] if flagged else [])
    patterns = [p["pattern"] for p in doc["patterns_detected"]]
    assert patterns == ([f"high_{name.lower()}_memcpy"] if flagged else [])


def test_device_to_device_never_flagged() -> None:
    doc = dump(make_run({"D2D": direction(500, 50_000.0)}))
    assert doc["memcpy_assessment"] == {
        "flagged": False,
        "total_count": 500,
        "total_time_ms": 50.0,
        "percent_of_total": 50.0,
        "issues": [],
    }


def test_memcpy_issue_fields_and_order() -> None:
    # H2D 15 x, 21.34 µs over 100 ms -> 0.021 ms, 0.02134 % -> 0.02
    dirs = {"H2D": direction(15, 21.34, 2207.27), "D2H": direction(2, 6_789.4, 800.0)}
    doc = dump(make_run(dirs))
    assert doc["memcpy_assessment"]["issues"] == [
        {
            "direction": "D2H",
            "count": 2,
            "time_ms": 6.789,
            "percent_of_total": 6.79,
            "avg_bytes": 800.0,
            "description": "D2H memcpy: 2 transfers, 6.789ms (6.79% of total)",
        },
        {
            "direction": "H2D",
            "count": 15,
            "time_ms": 0.021,
            "percent_of_total": 0.02,
            "avg_bytes": 2207.27,
            "description": "H2D memcpy: 15 transfers, 0.021ms (0.02% of total)",
        },
    ]
    assert doc["memcpy_assessment"]["total_count"] == 17
    assert doc["memcpy_assessment"]["total_time_ms"] == 6.811
    assert doc["memcpy_summary"]["total_time_ms"] == 6.811


# --- communication blocking ---------------------------------------------------------------


def test_no_communication() -> None:
    doc = dump(make_run())
    assert doc["nccl_blocking_assessment"] == {
        "flagged": False,
        "details": "No communication events detected",
    }
    assert doc["overlap_assessment"] == {
        "flagged": False,
        "details": "Insufficient communication data for overlap analysis",
    }
    assert doc["patterns_detected"] == []


@pytest.mark.parametrize(("exposed_us", "flagged"), [(5_000.0, False), (5_010.0, True)])
def test_exposed_comm_edge(exposed_us: float, flagged: bool) -> None:
    ovl = overlap(comm_us=20_000.0, exposed_us=exposed_us, ratio=0.9)
    doc = dump(make_run(nccl_count=3, ovl=ovl))
    pct = round(exposed_us / 1000, 2)
    assert doc["nccl_blocking_assessment"] == {
        "flagged": flagged,
        "exposed_comm_time_ms": exposed_us / 1000,
        "total_comm_time_ms": 20.0,
        "exposed_percent_of_total": pct,
        "description": f"Exposed (non-overlapped) communication: {pct:.1f}% of total GPU time",
    }
    assert ("nccl_blocking_compute" in [p["pattern"] for p in doc["patterns_detected"]]) is flagged


# --- overlap ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("comm_us", "ratio", "expected"),
    [
        (99.99, 0.1, None),  # below 100 µs of communication: not judged
        (500.0, None, None),  # no ratio: not judged
        (100.0, 0.6999, True),  # exactly 100 µs is enough; 69.99 % < 70 %
        (100.0, 0.7, False),  # exactly the target
    ],
)
def test_overlap_edges(comm_us: float, ratio: float | None, expected: bool | None) -> None:
    ovl = overlap(comm_us=comm_us, exposed_us=0.0, ratio=ratio)
    doc = dump(make_run(nccl_count=1, ovl=ovl))
    got = doc["overlap_assessment"]
    if expected is None:
        assert got == {
            "flagged": False,
            "details": "Insufficient communication data for overlap analysis",
        }
        return
    assert ratio is not None
    assert got == {
        "flagged": expected,
        "overlap_ratio": ratio,
        "overlap_percent": round(ratio * 100, 2),
        "target_percent": 70,
        "description": f"Compute/communication overlap: {ratio * 100:.1f}% (target > 70%)",
    }
    patterns = [p["pattern"] for p in doc["patterns_detected"]]
    assert ("poor_comm_compute_overlap" in patterns) is expected


def test_pattern_order() -> None:
    ovl = overlap(comm_us=30_000.0, exposed_us=20_000.0, ratio=0.3333)
    doc = dump(make_run({"H2D": direction(11, 10.0)}, nccl_count=2, ovl=ovl))
    assert [p["pattern"] for p in doc["patterns_detected"]] == [
        "high_h2d_memcpy",
        "nccl_blocking_compute",
        "poor_comm_compute_overlap",
    ]
    assert doc["impact_estimates"] == []


# --- cross-validation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("computation_percent", "status"),
    [(49.0, "PASS"), (48.99, "WARN")],  # mk 50 ms: 1/50 = 2.0 % (PASS), 1.01/50 = 2.02 % WARN
)
def test_cross_validation_tolerance(computation_percent: float, status: str) -> None:
    ovl = overlap(computation_time_us=50_000.0)
    run = make_run(ovl=ovl, computation_percent=computation_percent)
    cv = dump(run)["cross_validation"]
    tl = computation_percent
    assert cv["checks"][0] == {
        "metric": "Computation time",
        "mk_ms": 50.0,
        "tl_ms": tl,
        "diff_ms": round(50 - tl, 3),
        "diff_pct": round((50 - tl) / 50 * 100, 2),
        "status": status,
    }
    assert cv["status"] == status
    expected = (
        [f"Computation time: multi_kernel_data=50.000ms vs gpu_timeline={tl:.3f}ms (diff 2.0%)"]
        if status == "WARN"
        else []
    )
    assert cv["warnings"] == expected


def test_cross_validation_zero_and_total() -> None:
    checks = dump(make_run())["cross_validation"]["checks"]
    assert [c["metric"] for c in checks] == [
        "Computation time",
        "Exposed communication time",
        "Exposed memcpy time",
        "Total GPU time",
    ]
    zero = {"metric": "Exposed communication time", "status": "PASS", "mk_ms": 0, "tl_ms": 0}
    assert checks[1] == {**zero, "diff_ms": 0}
    assert checks[3]["status"] == "PASS" and checks[3]["diff_pct"] == 0.0


def test_cross_validation_skips_missing_timeline_rows() -> None:
    # a gpu_timeline without computation or exposed-memcpy rows: those two are not compared
    timeline = Timeline(
        total_time=TimelineRow(time_ms=100.0, percent=100.0),
        exposed_comm_time=TimelineRow(time_ms=0.0, percent=0.0),
    )
    cv = dump(replace(make_run(), timeline=timeline))["cross_validation"]
    assert [c["status"] for c in cv["checks"]] == ["SKIP", "PASS", "SKIP", "PASS"]
    assert cv["checks"][0] == {
        "metric": "Computation time",
        "status": "SKIP",
        "reason": "no gpu_timeline value",
    }
    assert cv["status"] == "PASS"


def test_cross_validation_skips_without_overlap_analysis() -> None:
    run = make_run()
    assert run.multi_kernel is not None
    no_overlap = run.multi_kernel.model_copy(update={"overlap_analysis": None})
    doc = dump(replace(run, multi_kernel=no_overlap))
    assert {c["reason"] for c in doc["cross_validation"]["checks"]} == {
        "no multi_kernel_data value"
    }
    assert [c["status"] for c in doc["cross_validation"]["checks"]] == ["SKIP"] * 4
    assert doc["cross_validation"]["status"] == "PASS"
    assert doc["overlap_analysis"] == {}


# --- totals and errors ----------------------------------------------------------------------


def test_no_gpu_total_leaves_the_memcpy_assessment_unjudged() -> None:
    run = make_run({"H2D": direction(11, 6_000.0)})
    zero = system_inputs(manifest(), multi_kernel=run.multi_kernel)  # total 0 ms, no timeline
    doc = dump(zero)
    assert doc["status"] == "SUCCESS"
    assert doc["total_time_ms"] == 0.0
    assert doc["memcpy_assessment"] == {"flagged": False, "details": NO_TOTAL}
    assert doc["patterns_detected"] == []  # 11 transfers, but nothing to judge them against


def test_success_document_keys() -> None:
    doc = dump(make_run())
    assert list(doc) == [
        "status",
        "total_time_ms",
        "memcpy_summary",
        "nccl_summary",
        "overlap_analysis",
        "memcpy_assessment",
        "nccl_blocking_assessment",
        "overlap_assessment",
        "patterns_detected",
        "cross_validation",
        "impact_estimates",
    ]
    assert doc["status"] == "SUCCESS"
    assert doc["nccl_summary"] == {"total_count": 0, "total_time_ms": 0.0, "top_ops": []}
    assert doc["overlap_analysis"]["comm_overlap_ratio"] is None  # raw, nulls kept


ERROR_SHAPE = {
    "memcpy_assessment": {"flagged": False},
    "nccl_blocking_assessment": {"flagged": False},
    "overlap_assessment": {"flagged": False},
    "patterns_detected": [],
}


def test_missing_data_gives_error_document() -> None:
    doc = dump(replace(make_run(), multi_kernel=None))
    assert doc.pop("status") == "ERROR"
    assert doc.pop("error").startswith("the run has no multi-kernel data")
    assert doc == ERROR_SHAPE


def test_data_reporting_an_error_gives_error_document() -> None:
    run = make_run()
    assert run.multi_kernel is not None
    failed = run.multi_kernel.model_copy(update={"error": "no GPU events"})
    doc = dump(replace(run, multi_kernel=failed))
    assert doc["status"] == "ERROR"
    assert doc["error"] == "the multi-kernel data reports an error: no GPU events"
    assert {k: doc[k] for k in ERROR_SHAPE} == ERROR_SHAPE


def test_write_metrics_round_trip(tmp_path: Path) -> None:
    doc = analyze_multi_kernel(make_run())
    target = RunFolder(tmp_path / "run").write_metrics("multi_kernel", doc)
    assert target == tmp_path / "run" / layout.metrics("multi_kernel")
    assert target == tmp_path / "run/category_data/multi_kernel_metrics.json"
    assert json.loads(target.read_text()) == doc.model_dump(mode="json")
    assert [p.name for p in target.parent.iterdir()] == ["multi_kernel_metrics.json"]
