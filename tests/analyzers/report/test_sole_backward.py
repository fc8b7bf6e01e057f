"""Rule 3 of §4.2: a backward op with no model is scored with its forward op's backward."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.report.build import build_report
from tests.helpers.trace_builder import TraceBuilder

BF16 = "c10::BFloat16"
QKV = [1, 2, 4, 8]  # B, H, N, d in the (B, H, N, d) layout of aten's flash SDPA


def sdpa_training_trace() -> list[dict]:
    tb = TraceBuilder
    fwd_args = {
        "Sequence number": 5,
        "Input Dims": [QKV, QKV, QKV, [], [], [], []],
        "Input type": [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", "Scalar"],
        "Input Strides": [[64, 32, 8, 1]] * 3 + [[], [], [], []],
        "Concrete Inputs": ["", "", "", "0.", "False", "False", "0.125"],
    }
    node = "ScaledDotProductFlashAttentionBackward0"
    return [
        tb.cpu_op("aten::_scaled_dot_product_flash_attention", 0, 50, args=fwd_args),
        *tb.launch(1, ts=10, kernel_ts=100, kernel_dur=20, kernel_name="flash_fwd_kernel"),
        # the autograd thread
        tb.cpu_op(
            f"autograd::engine::evaluate_function: {node}",
            200,
            80,
            tid=2,
            args={"Sequence number": 5},
        ),
        tb.cpu_op(node, 205, 70, tid=2),
        tb.cpu_op("aten::_scaled_dot_product_flash_attention_backward", 210, 60, tid=2),
        *tb.launch(2, ts=220, kernel_ts=300, kernel_dur=30, kernel_name="flash_bwd_kernel", tid=2),
        *tb.launch(
            3, ts=240, kernel_ts=340, kernel_dur=10, kernel_name="flash_bwd_dq_kernel", tid=2
        ),
    ]


@pytest.fixture
def report(tmp_path: Path):
    model = TraceBuilder(tmp_path).model(sdpa_training_trace())
    return build_report(model, None)


def test_the_backward_node_op_is_scored_with_the_forward_backward_formula(report) -> None:
    table = report.sheets["unified_perf_summary"].set_index("name")
    row = table.loc["ScaledDotProductFlashAttentionBackward0"]
    assert row["op category"] == "SDPA_bwd"
    # flash backward, B=1 H=2 N=4 d=8, not causal: recompute QK^T, dV, dP, dQ, dK, each
    # 2*B*H*N*N*d = 512 FLOPs -> 2,560
    assert row["GFLOPS"] == pytest.approx(2560 / 1e9)
    assert row["Kernel Time (µs)_sum"] == pytest.approx(40.0)  # both backward kernels
    assert row["has_perf_model"]


def test_the_forward_op_keeps_its_own_row_and_kernels(report) -> None:
    table = report.sheets["unified_perf_summary"].set_index("name")
    assert table.loc["aten::_scaled_dot_product_flash_attention", "op category"] == "SDPA_fwd"
    assert table.loc["aten::_scaled_dot_product_flash_attention", "Kernel Time (µs)_sum"] == 20
    assert "aten::_scaled_dot_product_flash_attention_backward" not in table.index
    assert len(table) == 2  # no synthetic rows: every kernel is owned
