"""Compute rows that also launched copies lose the copies' time (docs/analysis.md#category-time):
a copy is judged by the copy analysis, never scored as computation."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.computation_time import row_computation
from rooflens.analyzers.prepare.copy_rows import without_copies
from rooflens.analyzers.prepare.manifest import categorise
from rooflens.analyzers.report.build import build_report
from tests.helpers.trace_builder import TraceBuilder

CAST = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>"


def test_the_copy_share_leaves_times_and_raises_rates() -> None:
    """40 µs of kernel time over 2 calls, 30 µs of it copies: a quarter is computation."""
    rows = pd.DataFrame({
        "ex_UID": [7, 8], "Kernel Time (µs)_sum": [40.0, 12.0],
        "Kernel Time (µs)_mean": [20.0, 6.0], "Kernel Time (µs)_max": [22.0, 7.0],
        "TB/s_mean": [0.5, 1.0], "Pct Roofline_mean": [10.0, 30.0],
        "Pct Roofline_max": [11.0, 31.0],
    })  # fmt: skip
    out = without_copies(rows, {7: 30.0})
    assert out["Kernel Time (µs)_sum"].tolist() == [10.0, 12.0]
    assert out["Kernel Time (µs)_mean"].tolist() == [5.0, 6.0]
    assert out["Kernel Time (µs)_max"].tolist() == [5.5, 7.0]
    assert out["TB/s_mean"].tolist() == [2.0, 1.0]
    assert out["Pct Roofline_mean"].tolist() == [40.0, 30.0]
    assert out["Pct Roofline_max"].tolist() == [44.0, 31.0]
    assert without_copies(rows, {}) is rows


def test_a_cross_device_cast_keeps_only_its_kernel_time(tmp_path: Path) -> None:
    """aten::copy_ copies host-to-device (30 µs), then casts on the device (10 µs)."""
    tb = TraceBuilder(tmp_path)
    events = [
        tb.cpu_op("aten::copy_", 0, 100),
        tb.runtime("cudaMemcpyAsync", 10, 4, 3),
        tb.flow("s", 3, 1, 1, 10),
        tb.flow("f", 3, 0, 7, 20),
        tb.kernel("Memcpy HtoD (Pinned -> Device)", 20, 30, 3, cat="gpu_memcpy"),
        *tb.launch(4, 60, 60, 10, CAST),
    ]
    model = tb.model(events)
    platform = get_platform("MI300X")
    report = build_report(model, platform)
    assert report.unified is not None
    computation = row_computation(model, report.unified)
    assert list(computation.copy_us.values()) == [30.0]
    tables = categorise(
        report, platform, "t.json", str(tmp_path), has_multi_kernel=True, fusion_count=0,
        computation=computation,
    )  # fmt: skip
    rows = tables.ops["elementwise"]
    assert rows["Kernel Time (µs)_sum"].tolist() == [pytest.approx(10.0)]
    unified = report.sheets["unified_perf_summary"]
    assert unified["Kernel Time (µs)_sum"].tolist() == [pytest.approx(40.0)]  # TraceLens's
