"""Convolution metrics on the ResNet MI300X trace: the layout transposes the convolutions
launch, and each category's share of computation time (docs/deviations.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.truth import compute_metrics, ranked

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared


def test_resnet_convolutions_carry_their_layout_transposes(shared: Path) -> None:
    """MIOpen wraps ResNet's implicit-GEMM convolutions in NCHW<->NHWC (and CNHW) transposes:
    2.429 of 4.744 ms of conv_fwd and 1.786 of 5.313 ms of conv_bwd kernel time, which
    TraceLens reports as 0. The categories' shares of the 19.234 ms of computation time are
    24.67 and 27.62 % (TraceLens: 8.39 and 9.4, shares of the 56.5 ms window)."""
    trace = shared / "traces/mi300/resnet_act_checkpoint.json.gz"
    metrics = compute_metrics(ranked(trace, "MI300X", until="aggregated"))
    found = {}
    for key in ("conv_fwd", "conv_bwd"):
        specific = metrics[key].category_specific or {}
        found[key] = (
            specific["transpose_count"],
            specific["transpose_time_ms"],
            specific["transpose_overhead_percent"],
            metrics[key].percent_of_compute,
            metrics[key].percent_of_total,
        )
    assert found == {
        "conv_fwd": (381, 2.429, 51.2, 24.67, 8.39),
        "conv_bwd": (366, 1.786, 33.61, 27.62, 9.4),
    }
