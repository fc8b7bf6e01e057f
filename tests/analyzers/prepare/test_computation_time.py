"""Category time: the share of the timeline's computation time (docs/analysis.md#category-time)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.computation_time import kernel_shares, row_computation
from rooflens.analyzers.prepare.manifest import categorise
from rooflens.analyzers.report.build import build_report
from tests.helpers.trace_builder import TraceBuilder


def test_overlapping_kernels_split_the_time_they_share() -> None:
    gpu = pd.DataFrame(
        {
            "ts": [0.0, 5.0, 0.0, 20.0, 30.0, 40.0, 50.0],
            "dur": [10.0, 10.0, 20.0, 10.0, 5.0, 5.0, 4.0],
            "cat": ["kernel", "kernel", "gpu_memcpy", "gpu_memset", "kernel", "kernel", "kernel"],
            "bucket": [
                "computation",
                "computation",
                "memcpy",
                "computation",
                "communication",
                "computation",
                "computation",
            ],
            "linked": [True, True, True, True, True, False, True],
        },
        index=[3, 4, 5, 6, 7, 8, 9],
    )
    shares = kernel_shares(gpu)
    # [0,5) to kernel 3 alone, [5,10) split in two, [10,15) to kernel 4 alone: 7.5 each,
    # 15 in all = the union; copy, memset, communication and unlinked events hold nothing
    assert shares.to_dict() == {3: 7.5, 4: 7.5, 5: 0.0, 6: 0.0, 7: 0.0, 8: 0.0, 9: 4.0}


def test_a_memset_takes_no_share_of_the_kernel_it_overlaps() -> None:
    gpu = pd.DataFrame(
        {
            "ts": [0.0, 2.0],
            "dur": [10.0, 4.0],
            "cat": ["kernel", "gpu_memset"],
            "bucket": ["computation", "computation"],
            "linked": [True, True],
        }
    )
    assert kernel_shares(gpu).tolist() == [10.0, 0.0]


def trace_events(tb: TraceBuilder) -> list[dict]:
    """aten::mul with two kernels on two streams overlapping by 4 µs, aten::copy_ with a
    host-to-device copy, aten::zero_ with a memset only."""
    copy = tb.kernel("Memcpy HtoD (Pageable -> Device)", 200, 30, 3, cat="gpu_memcpy")
    memset = tb.kernel("Memset (Device)", 300, 6, 4, cat="gpu_memset")
    return [
        tb.cpu_op("aten::mul", 0, 50),
        *tb.launch(1, 10, 100, 20, "void at::native::vectorized_elementwise_kernel<4>"),
        *tb.launch(2, 20, 116, 20, "void at::native::vectorized_elementwise_kernel<4>", 8),
        tb.cpu_op("aten::copy_", 60, 50),
        tb.runtime("cudaMemcpyAsync", 70, 4, 3),
        tb.flow("s", 3, 1, 1, 70),
        tb.flow("f", 3, 0, 7, 200),
        copy,
        tb.cpu_op("aten::zero_", 120, 50),
        tb.runtime("cudaMemsetAsync", 130, 4, 4),
        tb.flow("s", 4, 1, 1, 130),
        tb.flow("f", 4, 0, 7, 300),
        memset,
    ]


@pytest.mark.parametrize("scored", [False, True])
def test_copies_and_memsets_leave_the_compute_categories(tmp_path: Path, scored: bool) -> None:
    tb = TraceBuilder(tmp_path)
    model = tb.model(trace_events(tb))
    platform = get_platform("MI300X")
    report = build_report(model, platform)
    assert report.unified is not None
    computation = row_computation(model, report.unified) if scored else None
    tables = categorise(
        report, platform, "t.json", str(tmp_path), has_multi_kernel=True, fusion_count=0,
        computation=computation,
    )  # fmt: skip
    compute = {c.name: c for c in tables.manifest.categories if c.tier == "compute_kernel"}
    timeline = {r["type"]: r["time ms"] for r in report.sheets["gpu_timeline"].to_dict("records")}
    if not scored:  # TraceLens's figures: the copy row is elementwise, memset in other
        assert compute["elementwise"].gpu_kernel_time_ms == pytest.approx(0.066)
        return
    # the two mul kernels' union (36 µs) is all the computation but the memset's 6 µs
    assert timeline["computation_time"] == pytest.approx(0.042)
    assert list(compute) == ["elementwise"]
    assert compute["elementwise"].gpu_kernel_time_ms == pytest.approx(0.036)
    assert compute["elementwise"].ops_count == 1
    assert tables.manifest.notes == [
        "2 operator rows (0.036 ms of GPU time) ran only copies or memsets: they are not in "
        "the compute categories (see multi_kernel for copies)."
    ]
