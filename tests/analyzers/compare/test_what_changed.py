"""The "what changed" section on two generated traces of the same model with four planted
differences: trace 2 has an extra operator, runs the forward GELU on a renamed kernel, feeds the
last `aten::mul` a smaller tensor, and takes twice as long for every attention kernel."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from rooflens.analyzers.compare.tree_diff import diff_traces
from rooflens.analyzers.compare.what_changed import (
    KernelChange,
    OnlyIn,
    ShapeChange,
    WhatChanged,
    above_noise,
    kernel_family,
    what_changed,
)
from rooflens.analyzers.compare.what_changed_md import headline, what_changed_markdown
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.synthetic.sample import (
    GELU,
    GPU_PID,
    HOST_PID,
    LAYERS,
    MAIN_TID,
    STREAM,
    VOCAB,
    B,
    S,
    write_document,
    write_sample_trace,
)
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

FAST_GELU = "gelu_fast_kernel"
ATTENTION_KERNEL = "attn_fwd"
ATTENTION_OP = "aten::_scaled_dot_product_flash_attention"
EXTRA_OP, EXTRA_KERNEL, EXTRA_US = "aten::zero_", "zero_kernel", 42.0
OLD_DIMS = [[B, S, VOCAB], [B, S, VOCAB]]
NEW_DIMS = [[B, S, VOCAB // 2], [B, S, VOCAB // 2]]


def _extra_op(start: float) -> list[dict]:
    """A top-level operator launching one kernel, after everything else in the trace."""
    host = {"pid": HOST_PID, "tid": MAIN_TID}
    gpu = {"pid": GPU_PID, "tid": STREAM}
    ids = {"correlation": 99_999, "External id": 99_999}
    flow = {"id": 99_999, "cat": "ac2g", "name": "ac2g"}
    return [
        {"ph": "X", "cat": "cpu_op", "name": EXTRA_OP, "ts": start, "dur": 20.0, **host,
         "args": {"External id": 99_999, "Input Dims": [[B, S]], "Input type": ["float"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "ts": start + 5,
         "dur": 5.0, **host, "args": {**ids, "cbid": 3}},
        {"ph": "s", **flow, **host, "ts": start + 5},
        {"ph": "X", "cat": "kernel", "name": EXTRA_KERNEL, "ts": start + 30, "dur": EXTRA_US,
         **gpu, "args": {**ids, "device": GPU_PID, "stream": STREAM}},
        {"ph": "f", **flow, **gpu, "ts": start + 30, "bp": "e"},
    ]  # fmt: skip


def planted_pair(folder: Path) -> tuple[Path, Path, dict[str, float]]:
    """The sample trace and its planted copy; returns both paths and trace 1's times (µs)."""
    one = write_sample_trace(folder / "trace1.json.gz", seed=0)
    document = json.loads(gzip.decompress(one.read_bytes()))
    times = {"gelu": 0.0, "attention": 0.0, "mul": 0.0}
    events = document["traceEvents"]
    for event in events:
        args = event.get("args", {})
        if event.get("cat") == "kernel" and event["name"] == GELU:
            times["gelu"] += event["dur"]
            event["name"] = FAST_GELU
        elif event.get("cat") == "kernel" and event["name"] == ATTENTION_KERNEL:
            times["attention"] += event["dur"]
            event["dur"] *= 2
        elif event["name"] == "aten::mul" and args.get("Input Dims") == OLD_DIMS:
            args["Input Dims"] = NEW_DIMS
            mul_external = args["External id"]
    for event in events:
        if event.get("cat") == "kernel" and event["args"].get("External id") == mul_external:
            times["mul"] += event["dur"]
    last = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e)
    events += _extra_op(last + 100)
    return one, write_document(folder / "trace2.json.gz", document), times


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[WhatChanged, dict[str, float]]:
    one, two, times = planted_pair(tmp_path_factory.mktemp("pair"))
    model1, model2 = build_model(load_trace(one)), build_model(load_trace(two))
    diff = diff_traces(model1, model2)
    section = what_changed(diff, build_report(model1, None), build_report(model2, None))
    return section, times


def test_names_in_one_trace_only(planted: tuple[WhatChanged, dict[str, float]]) -> None:
    section, times = planted
    assert section.operators_only == (OnlyIn(EXTRA_OP, 2, 1, EXTRA_US),)
    assert times["gelu"] < EXTRA_US  # largest time first; a tie puts trace 1 first
    assert section.kernels_only == (
        OnlyIn(EXTRA_KERNEL, 2, 1, EXTRA_US),
        OnlyIn(GELU, 1, LAYERS, pytest.approx(times["gelu"])),
        OnlyIn(FAST_GELU, 2, LAYERS, pytest.approx(times["gelu"])),
    )


def test_renamed_kernel(planted: tuple[WhatChanged, dict[str, float]]) -> None:
    section, times = planted
    gelu = times["gelu"]
    change = KernelChange("aten::gelu", LAYERS, (GELU,), (FAST_GELU,), gelu, gelu)
    assert section.kernel_changes == (change,)
    assert change.families1 == ("PyTorch Native",) and change.families2 == ("other",)
    assert change.library_changed


def test_changed_shape(planted: tuple[WhatChanged, dict[str, float]]) -> None:
    section, times = planted
    dims = [json.dumps(d, separators=(",", ":")) for d in (OLD_DIMS, NEW_DIMS)]
    types = '["c10::BFloat16","c10::BFloat16"]'
    mul = times["mul"]
    assert mul > 0
    assert section.shape_changes == (ShapeChange("aten::mul", 1, *dims, types, types, mul, mul),)


def test_slower_operator(planted: tuple[WhatChanged, dict[str, float]]) -> None:
    section, times = planted
    assert section.improvements == ()
    (slower,) = section.regressions
    assert slower.operator == ATTENTION_OP
    assert slower.count == LAYERS
    assert slower.time1_us == pytest.approx(times["attention"])
    assert slower.time2_us == pytest.approx(2 * times["attention"])
    assert slower.ratio == pytest.approx(2.0)
    assert slower.call_site == "nn.Module: TinyTransformer;nn.Module: TransformerBlock"
    assert section.top == slower


def test_markdown(planted: tuple[WhatChanged, dict[str, float]]) -> None:
    section, times = planted
    text = what_changed_markdown(section, top_n=2)
    assert text.startswith("## What changed\n\n`aten::_scaled_dot_product_flash_attention` is ")
    assert "×2.00" in headline(section)
    assert f"| {times['attention']:,.1f} | {2 * times['attention']:,.1f} |" in text
    assert "### Faster in trace 2\n\nNone." in text
    assert "… and 1 more." in text  # three kernels in one trace only, two shown
    assert text.count("### ") == 6


def test_noise_and_families() -> None:
    assert not above_noise(200.0, 200.0)
    assert not above_noise(100.0, 104.0)  # 4 % of 104 µs
    assert not above_noise(10.0, 10.9)  # 9 % but under 1 µs
    assert above_noise(100.0, 106.0)
    assert kernel_family("Cijk_Ailk_Bljk_SB_MT128x128x32") == "Tensile"
    assert kernel_family("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n") == "cuBLAS"
    assert kernel_family("cutlass3x_sm90_tensorop_gemm") == "CUTLASS"
    assert kernel_family("miopenConvolutionForwardAlgo") == "MIOpen"
    assert kernel_family("cudnn::engines::spatial_convolution_2d") == "cuDNN"
    assert kernel_family("flash_fwd_hdim64_bf16_sm80<cutlass::bfloat16_t>") == "FlashAttention"
    assert kernel_family("moe_sum_kernel<BF16>") == "other"
    assert kernel_family("attn_fwd") == "AOTriton"
    assert kernel_family("ck_moe_stage1_kernel<BF16, 128, 128>") == "CK"
    assert kernel_family("batched_transpose_64x64_pack_4x4_ediv_4x4_bf16") == "other"


def test_a_trace_against_itself(tmp_path: Path) -> None:
    model = build_model(load_trace(write_sample_trace(tmp_path / "t.json.gz", seed=3)))
    report = build_report(model, None)
    section = what_changed(diff_traces(model, model), report, report)
    assert section == WhatChanged((), (), (), (), (), ())
    assert headline(section) == "No shared operator's time changed by more than 5% (and 1 µs)."
