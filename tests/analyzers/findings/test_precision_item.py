"""The precision item (analyzers/findings/ranking/precision_item.py) and the kernels it reads
(analyzers/categories/precision_mix.py): docs/perf-models.md#precision-without-shapes."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rooflens.analyzers.categories.models import CategoryMetrics, Efficiency, Operation
from rooflens.analyzers.categories.precision_mix import SimtKernel, simt_kernels
from rooflens.analyzers.findings.ranking.precision_item import FRACTIONS, KEY, precision_candidates
from rooflens.analyzers.markdown_text import md_code
from rooflens.analyzers.prepare.categories import GpuUtilization

GPU = GpuUtilization(
    total_time_ms=1000.0,
    computation_time_percent=80.0,  # 800 ms of compute
    exposed_comm_time_percent=0.0,
    exposed_memcpy_time_percent=0.0,
    idle_time_percent=20.0,
)


def kernel(name: str, ms: float, *, vendor: str = "nvidia", conv: bool = False) -> SimtKernel:
    return SimtKernel(operation="aten::mm", kernel=name, precision="fp32", vendor=vendor,
                      library=None, convolution=conv, count=10, time_ms=ms)  # fmt: skip


def metrics(*kernels: SimtKernel) -> dict[str, CategoryMetrics]:
    return {"gemm": CategoryMetrics(category="gemm", status="OK", simt_kernels=kernels)}


def test_below_a_fifth_of_compute_there_is_no_item() -> None:
    assert list(precision_candidates(metrics(kernel("ampere_sgemm_128x64_nn", 159.9)), GPU)) == []


def test_the_item_names_the_share_the_top_kernels_and_the_fix() -> None:
    found = metrics(
        kernel("ampere_sgemm_128x64_nn", 240.0),
        kernel("scudnn_128x64_relu_interior_nn_v1", 120.0, conv=True),
        kernel("ampere_sgemm_128x64_nn", 40.0),  # the same kernel under another operation
    )
    (item,) = precision_candidates(found, GPU)
    assert (item.category, item.kind, item.estimate_method) == (KEY, "compute", "quantified")
    assert item.title == (
        "fp32 SIMT kernels take 50.0 % of compute: AMP (bf16/fp16) or TF32, and channels_last "
        "for convolutions (`ampere_sgemm_128x64_nn` 35.0 %, `scudnn_128x64_relu_interior_nn_v1` "
        "15.0 %)"
    )
    assert item.saving.cap_ms == pytest.approx(400.0)
    assert item.saving.range_ms == pytest.approx(tuple(400.0 * f for f in FRACTIONS))
    assert item.saving.pool == "kernels"
    assert "not a roofline" in item.saving.basis


def test_amd_kernels_read_valu_and_before_ampere_fp16() -> None:
    (amd,) = precision_candidates(metrics(kernel("Cijk_Ailk_Bljk_SB_MT64x64x8", 400.0,
                                                 vendor="amd")), GPU)  # fmt: skip
    assert amd.title.startswith("fp32 VALU kernels take 50.0 % of compute: AMP (bf16/fp16) (")
    assert "vector ALUs" in amd.saving.basis
    (volta,) = precision_candidates(metrics(kernel("volta_sgemm_128x64_nn", 400.0)), GPU)
    assert "AMP (fp16: no bf16 or TF32 tensor cores before Ampere)" in volta.title


def test_a_name_is_a_code_span_in_the_title() -> None:
    (item,) = precision_candidates(metrics(kernel("a`b|c sgemm", 400.0)), GPU)
    assert f"({md_code('a`b|c sgemm', 80)} 50.0 %)" in item.title


def test_only_unmodelled_rows_simt_matrix_kernels_are_listed() -> None:
    """Three rows: an fp32 SIMT GEMM without a roofline (listed), the same with one (not: the
    roofline prices it), a bf16 tensor-core GEMM without one (not: already on the matrix
    units); and a GPU-only row that is its own kernel."""

    def details(name: str, us: float) -> str:
        return json.dumps([{"name": name, "count": 4, "total_duration_us": us}])

    ops = pd.DataFrame({
        "name": ["aten::mm", "aten::addmm", "aten::bmm", "volta_sgemm_64x32_sliced1x4_nn"],
        "Kernel Time (µs)_sum": [3000.0, 2000.0, 1000.0, 500.0],
        "kernel_details_summary": [
            details("volta_sgemm_128x64_nn", 3000.0),
            details("volta_sgemm_128x32_tn", 2000.0),
            details("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 1000.0),
            None,
        ],
        "operation_count": [4, 4, 4, 7],
    })  # fmt: skip

    def op(name: str, efficiency: float | None) -> Operation:
        return Operation(name=name, count=4, time_ms=1.0, percent_of_category=1.0,
                         percent_of_total=1.0,
                         efficiency=Efficiency(efficiency_percent=efficiency))  # fmt: skip

    operations = [op("aten::mm", None), op("aten::addmm", 40.0), op("aten::bmm", None),
                  op("volta_sgemm_64x32_sliced1x4_nn", None)]  # fmt: skip
    found = simt_kernels(ops, operations)
    assert [(k.operation, k.kernel, k.time_ms, k.count) for k in found] == [
        ("aten::mm", "volta_sgemm_128x64_nn", 3.0, 4),
        ("volta_sgemm_64x32_sliced1x4_nn", "volta_sgemm_64x32_sliced1x4_nn", 0.5, 7),
    ]
    assert all(k.library == "cuBLAS" and k.vendor == "nvidia" for k in found)
    assert simt_kernels(pd.DataFrame(), []) == ()
