"""`unified_perf_summary` (perf_report.md §6.8-6.9, §7.6) on a hand-written trace.

Hand count for aten::mm (1024×512) @ (512×2048), bf16:
  FLOPs  = 2·M·N·K = 2·1024·2048·512 = 2,147,483,648        -> GFLOPS 2.147483648
  bytes  = (M·K + K·N + M·N)·2 = (524,288 + 1,048,576 + 2,097,152)·2 = 7,340,032
         -> Data Moved 7,340,032 / 2**20 = 7.0 MB, FLOPS/Byte = 2**31 / (7·2**20) = 2048/7
Platform stub: 200 TFLOPS matrix_bf16, 1000 GB/s:
  compute 2.147483648e9 / 200e12 s = 10.73741824 µs; memory 7,340,032 / 1e12 s = 7.340032 µs
  -> COMPUTE_BOUND, Roofline Time 10.73741824 µs.
Forward-thread instances: CPU 30 and 20 µs, kernels 40 and 80 µs:
  TFLOPS/s 53.6870912 and 26.8435456; TB/s 0.1835008 and 0.0917504;
  Pct Roofline 26.8435456 and 13.4217728.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
import pytest

from rooflens.analyzers.perf import registry
from rooflens.analyzers.perf.base import NO_MODEL
from rooflens.analyzers.perf.categories import default_table
from rooflens.analyzers.perf.platform_choice import NO_PLATFORM_REASON
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.report.unified import attribute_unified
from rooflens.analyzers.report.unified_table import build_unified

BF16 = "c10::BFloat16"
MM_ARGS = {"Input Dims": [[1024, 512], [512, 2048]], "Input type": [BF16, BF16]}
MM_FLOPS = 2 * 1024 * 2048 * 512
MM_BYTES = (1024 * 512 + 512 * 2048 + 1024 * 2048) * 2
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>"
SQRT2 = math.sqrt(2)


@dataclass(frozen=True)
class RoofStub:
    tflops: dict[str, float] = field(default_factory=lambda: {"matrix_bf16": 200.0})
    bandwidth_gbps: float = 1000.0

    def roof_tflops(self, compute_spec: str) -> float | None:
        return self.tflops.get(compute_spec)

    def mem_bw(self) -> float:
        return self.bandwidth_gbps


def events(tb):
    return [
        tb.thread_name("forward", tid=1),
        tb.thread_name("backward", tid=2),
        tb.cpu_op("aten::mm", 0, 30, args=MM_ARGS),
        *tb.launch(1, 5, 100, 40, kernel_name="gemm_kernel"),
        tb.cpu_op("aten::mm", 40, 20, args=MM_ARGS),
        *tb.launch(2, 45, 200, 80, kernel_name="gemm_kernel"),
        tb.cpu_op("aten::mm", 0, 10, tid=2, args=MM_ARGS),  # same args, other thread
        *tb.launch(3, 2, 300, 10, kernel_name="gemm_kernel", tid=2),
        tb.cpu_op("my::custom_op", 70, 10),  # no perf model
        *tb.launch(4, 72, 400, 5, kernel_name=ELEMENTWISE),
    ]


def unified_table(tb, platform, model_for=registry.model_for):
    model = tb.model(events(tb))
    ops = attribute_unified(model, registry.has_model)
    return build_unified(model, ops, default_table(), model_for, platform)


@pytest.fixture
def summary(tb):
    return unified_table(tb, RoofStub()).summary


def test_summary_columns_are_tracelens_s_in_order(summary):
    assert list(summary.columns) == [
        "name",
        "op category",
        "process_name",
        "process_label",
        "thread_name",
        "Input Dims",
        "Input type",
        "Input Strides",
        "Concrete Inputs",
        "ex_UID",
        "operation_count",
        "total_duration_us",
        "mean_duration_us",
        "std_duration_us",
        "GFLOPS",
        "Data Moved (MB)",
        "FLOPS/Byte",
        "Compute Spec",
        "Roofline Bound",
        "TB/s_mean",
        "TB/s_std",
        "TFLOPS/s_mean",
        "TFLOPS/s_std",
        "Kernel Time (µs)_mean",
        "Kernel Time (µs)_std",
        "Kernel Time (µs)_sum",
        "duration_us_median",
        "duration_us_min",
        "duration_us_max",
        "TB/s_median",
        "TB/s_min",
        "TB/s_max",
        "TFLOPS/s_median",
        "TFLOPS/s_min",
        "TFLOPS/s_max",
        "Roofline Time (µs)_first",
        "Pct Roofline_mean",
        "Pct Roofline_median",
        "Pct Roofline_std",
        "Pct Roofline_min",
        "Pct Roofline_max",
        "Kernel Time (µs)_median",
        "Kernel Time (µs)_min",
        "Kernel Time (µs)_max",
        "kernel_details_summary",
        "trunc_kernel_details",
        "perf_params",
        "has_perf_model",
        "entry_point",
        "call_stack_full",
        "Percentage (%)",
        "Cumulative Percentage (%)",
        "unmodelled_reason",  # ours, after TraceLens's columns (docs/perf-models.md)
    ]


def test_rows_are_grouped_by_signature_and_thread_sorted_by_kernel_time(summary):
    assert list(zip(summary["name"], summary["thread_name"], strict=True)) == [
        ("aten::mm", "forward"),
        ("aten::mm", "backward"),
        ("my::custom_op", "forward"),
    ]
    assert summary["operation_count"].tolist() == [2, 1, 1]
    assert summary["Kernel Time (µs)_sum"].tolist() == [120.0, 10.0, 5.0]
    assert summary["Percentage (%)"].tolist() == pytest.approx(
        [120 / 135 * 100, 10 / 135 * 100, 5 / 135 * 100]
    )
    assert summary["Cumulative Percentage (%)"].tolist() == pytest.approx(
        [120 / 135 * 100, 130 / 135 * 100, 100.0]
    )


def test_static_model_outputs_of_a_hand_counted_mm(summary):
    mm = summary.iloc[0]
    assert mm["op category"] == "GEMM"
    assert mm["Input Dims"] == "[[1024,512],[512,2048]]"
    assert mm["GFLOPS"] == pytest.approx(2.147483648, rel=1e-12)
    assert mm["Data Moved (MB)"] == pytest.approx(7.0, rel=1e-12)
    assert mm["FLOPS/Byte"] == pytest.approx(2048 / 7, rel=1e-12)
    assert mm["Compute Spec"] == "matrix_bf16"
    assert mm["Roofline Bound"] == "COMPUTE_BOUND"
    assert mm["Roofline Time (µs)_first"] == pytest.approx(10.73741824, rel=1e-12)
    assert mm["has_perf_model"]
    params = mm["perf_params"]
    assert (params["M"], params["N"], params["K"], params["B"]) == (1024, 2048, 512, 1)
    assert params["bias"] is False


def test_per_instance_rates_and_their_statistics(summary):
    mm = summary.iloc[0]
    assert mm["total_duration_us"] == 50.0  # CPU durations 30 and 20
    assert mm["mean_duration_us"] == 25.0
    assert mm["std_duration_us"] == pytest.approx(10 / SQRT2)  # sample std
    assert (mm["duration_us_median"], mm["duration_us_min"], mm["duration_us_max"]) == (
        25.0,
        20.0,
        30.0,
    )
    assert mm["Kernel Time (µs)_mean"] == 60.0
    assert mm["Kernel Time (µs)_std"] == pytest.approx(40 / SQRT2)
    assert mm["Kernel Time (µs)_median"] == 60.0
    assert (mm["Kernel Time (µs)_min"], mm["Kernel Time (µs)_max"]) == (40.0, 80.0)
    assert mm["TFLOPS/s_mean"] == pytest.approx((53.6870912 + 26.8435456) / 2)
    assert mm["TFLOPS/s_std"] == pytest.approx(26.8435456 / SQRT2)
    assert mm["TFLOPS/s_min"] == pytest.approx(26.8435456)
    assert mm["TFLOPS/s_max"] == pytest.approx(53.6870912)
    assert mm["TB/s_mean"] == pytest.approx((0.1835008 + 0.0917504) / 2)
    assert mm["TB/s_max"] == pytest.approx(0.1835008)
    assert mm["Pct Roofline_mean"] == pytest.approx((26.8435456 + 13.4217728) / 2)
    assert mm["Pct Roofline_median"] == pytest.approx((26.8435456 + 13.4217728) / 2)
    assert mm["Pct Roofline_std"] == pytest.approx(13.4217728 / SQRT2)
    assert mm["Pct Roofline_min"] == pytest.approx(13.4217728)
    assert mm["Pct Roofline_max"] == pytest.approx(26.8435456)
    single = summary.iloc[1]  # the other thread's instance: 10 µs of kernel
    assert single["Pct Roofline_mean"] == pytest.approx(107.3741824)
    assert math.isnan(single["Kernel Time (µs)_std"])


def test_ex_uid_is_the_first_instance(tb, summary):
    model = tb.model(events(tb))
    names = model.events["name"].astype(str)
    first_mm = int(names[names == "aten::mm"].index[0])
    assert summary.iloc[0]["ex_UID"] == first_mm


def test_an_op_without_model_gets_kernel_time_only(summary):
    row = summary.iloc[2]
    assert row["op category"] == "elementwise"  # kernel-name fallback
    assert not row["has_perf_model"]
    assert row["perf_params"] is None
    assert math.isnan(row["GFLOPS"])
    assert math.isnan(row["TFLOPS/s_mean"])
    assert math.isnan(row["Pct Roofline_mean"])
    assert pd.isna(row["Roofline Bound"])
    assert row["Compute Spec"] == ""
    assert row["Kernel Time (µs)_sum"] == 5.0


@pytest.mark.parametrize(
    ("roof", "bound", "roofline_us"),
    [
        # memory 7,340,032 B / 100 GB/s = 73.40032 µs > compute 1.073741824 µs
        (RoofStub({"matrix_bf16": 2000.0}, 100.0), "MEMORY_BOUND", 73.40032),
        # compute 2**31 / 2048e12 s == memory 7·2**20 / 7000e9 s == 1.048576 µs: a tie
        (RoofStub({"matrix_bf16": 2048.0}, 7000.0), "COMPUTE_BOUND", 1.048576),
    ],
)
def test_roofline_bound_is_compute_when_compute_time_is_at_least_memory_time(
    tb, roof, bound, roofline_us
):
    mm = unified_table(tb, roof).summary.iloc[0]
    assert mm["Roofline Bound"] == bound
    assert mm["Roofline Time (µs)_first"] == pytest.approx(roofline_us, rel=1e-12)
    # Pct Roofline = Roofline Time / Kernel Time × 100, per instance (40 and 80 µs)
    assert mm["Pct Roofline_max"] == pytest.approx(roofline_us / 40 * 100, rel=1e-12)


def test_no_roof_for_the_compute_spec_gives_no_roofline(tb):
    mm = unified_table(tb, RoofStub({"matrix_fp8": 1000.0})).summary.iloc[0]
    assert pd.isna(mm["Roofline Bound"])
    assert math.isnan(mm["Roofline Time (µs)_first"])
    assert math.isnan(mm["Pct Roofline_mean"])
    assert mm["GFLOPS"] == pytest.approx(2.147483648)  # the model's numbers stay


def test_no_platform_means_no_roofline_columns(tb):
    table = unified_table(tb, None)
    for column in ("Roofline Bound", "Roofline Time (µs)_first", "Pct Roofline_mean"):
        assert column not in table.summary.columns
    for column in ("Roofline Time (µs)", "Roofline Bound", "Pct Roofline"):
        assert column not in table.instances.columns
    mm = table.summary.iloc[0]
    assert mm["GFLOPS"] == pytest.approx(2.147483648)
    assert mm["TFLOPS/s_max"] == pytest.approx(53.6870912)
    # modelled, nothing to score against; an op without a model keeps its own reason
    assert mm["unmodelled_reason"] == NO_PLATFORM_REASON
    reasons = table.summary["unmodelled_reason"]
    modelled = table.summary["has_perf_model"].astype(bool)
    assert (reasons[modelled] == NO_PLATFORM_REASON).all()
    assert (reasons[~modelled] == NO_MODEL).all()
    assert pd.isna(unified_table(tb, RoofStub()).summary.iloc[0]["unmodelled_reason"])


def test_instances_hold_one_row_per_op_instance(tb):
    inst = unified_table(tb, RoofStub()).instances
    mm = inst[inst["name"] == "aten::mm"]
    assert mm["Kernel Time (µs)"].tolist() == [40.0, 80.0, 10.0]
    assert mm["duration_us"].tolist() == [30.0, 20.0, 10.0]
    assert mm["TFLOPS/s"].tolist() == pytest.approx([53.6870912, 26.8435456, 214.7483648])
    assert mm["Pct Roofline"].tolist() == pytest.approx([26.8435456, 13.4217728, 107.3741824])


def test_the_model_runs_once_per_signature(tb):
    calls: list[str] = []

    def counting(name):
        calls.append(name)
        return registry.model_for(name)

    unified_table(tb, RoofStub(), counting)
    assert calls.count("aten::mm") == 1


def test_roofline_coverage_is_the_share_of_kernel_time_with_a_pct_roofline(tb):
    report = build_report(tb.model(events(tb)), RoofStub())
    assert roofline_coverage(report) == pytest.approx(130 / 135)
    assert roofline_coverage(build_report(tb.model(events(tb)), None)) is None


def test_a_modelled_op_without_recorded_args_next_to_ops_with_args_keeps_its_row(tb):
    model = tb.model(
        [
            tb.cpu_op("aten::mm", 0, 30, args=MM_ARGS),
            *tb.launch(1, 5, 100, 40, kernel_name="gemm_kernel"),
            tb.cpu_op("aten::bmm", 40, 20),  # modelled, but no shapes recorded
            *tb.launch(2, 45, 200, 80, kernel_name="bmm_kernel"),
        ]
    )
    summary = build_report(model, RoofStub()).sheets["unified_perf_summary"].set_index("name")
    assert not summary.loc["aten::bmm", "has_perf_model"]  # the model declines, row stays
    assert summary.loc["aten::bmm", "Kernel Time (µs)_sum"] == 80.0
    assert summary.loc["aten::mm", "GFLOPS"] == pytest.approx(2.147483648)
