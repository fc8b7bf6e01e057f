"""Convolution's layout-transpose share on hand-built rows (docs/analysis.md#compute-categories)."""

from __future__ import annotations

import json

import pandas as pd

from rooflens.analyzers.categories import conv
from tests.helpers.pipeline_runs import category_metadata

META = category_metadata(util={"total_time_ms": 100.0, "computation_time_percent": 50.0})


def kernel(name: str, count: int, total_us: float) -> dict:
    return {"name": name, "stream": 0, "count": count, "total_duration_us": total_us}


def test_transposes_launched_by_convolutions_are_their_share_of_conv_time() -> None:
    """Two convolution rows (100 + 60 µs): MIOpen wraps the first one's implicit GEMM in a
    batched NCHW->NHWC transpose and back (12 + 18 µs over 4 launches), the second in a
    CNHW transpose (10 µs, 2 launches): 40 of 160 µs, 25 %."""
    rows = [
        {
            "name": "aten::convolution",
            "operation_count": 2,
            "Kernel Time (µs)_sum": 100.0,
            "kernel_details_summary": json.dumps(
                [
                    kernel("batched_transpose_32x32_half", 2, 12.0),
                    kernel("igemm_fwd_gtcx3_nhwc_bf16", 2, 70.0),
                    kernel("batched_transpose_16x32_half", 2, 18.0),
                ]
            ),
        },
        {
            "name": "aten::convolution_backward",
            "operation_count": 2,
            "Kernel Time (µs)_sum": 60.0,
            "kernel_details_summary": json.dumps(
                [
                    kernel("transpose_NCHW2CNHW_V2_2D_WG_off64", 2, 10.0),
                    kernel("SubTensorOpWithScalar1d", 2, 50.0),
                ]
            ),
        },
    ]
    found = conv.specific(pd.DataFrame(rows), META)
    assert (found["transpose_count"], found["transpose_time_ms"]) == (6, 0.04)
    assert found["transpose_overhead_percent"] == 25.0


def test_a_row_per_kernel_name_counts_when_the_kernel_is_a_transpose() -> None:
    rows = [
        {"name": name, "operation_count": 3, "Kernel Time (µs)_sum": us}
        for name, us in (("batched_transpose_32x32_half", 30.0), ("igemm_fwd_gtcx3_nhwc", 90.0))
    ]
    found = conv.specific(pd.DataFrame(rows), META)
    assert (found["transpose_count"], found["transpose_overhead_percent"]) == (3, 25.0)
