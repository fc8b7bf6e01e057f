"""Traces that lack what the perf models read, for tests with planted answers.

* `write_no_shapes_trace`: the sample training step (sample.py) profiled without
  `record_shapes`: no operator has `Input Dims`, `Input type`, `Input Strides` or
  `Concrete Inputs`, so no perf model can size any operator.
* `write_2021_conv_trace`: a small convolutional step in the format PyTorch wrote in 2021:
  operators recorded with shapes and dtypes but no `Concrete Inputs` or `Input Strides`, the
  old category spellings (`Operator`, `Kernel`, `Runtime`, `Memcpy`) and no `ac2g` flow
  events (launches link to kernels by correlation id). Its convolutions have stride 2 and
  padding 1 (`CONV_STRIDE`, `CONV_PADDING`), which the trace does not say: a model that
  assumed stride 1 and no padding would count `ASSUMED_FLOPS_RATIO` times their FLOPs.

Both are byte-for-byte the same for a seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .sample import (
    BF16,
    DEVICE,
    GEMM,
    _metadata,
    _record_step,
    _Step,
    write_document,
)

SHAPE_ARGS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
OLD_CATEGORIES = {
    "cpu_op": "Operator",
    "kernel": "Kernel",
    "cuda_runtime": "Runtime",
    "gpu_memcpy": "Memcpy",
}
# Each convolution: x (N, C_in, H, W) * w (C_out, C_in, 3, 3), stride 2, padding 1.
N, C_IN, HW, C_OUT, K = 32, 64, 112, 128, 3
CONV_STRIDE, CONV_PADDING, CONV_LAYERS = 2, 1, 3
OUT_HW = (HW + 2 * CONV_PADDING - K) // CONV_STRIDE + 1  # 56
CONV_FLOPS = 2 * C_IN * K * K * N * C_OUT * OUT_HW * OUT_HW  # what each really does
ASSUMED_FLOPS_RATIO = ((HW - K) // 1 + 1) ** 2 / OUT_HW**2  # stride 1, no padding: 110² / 56²
CONV_US = 40.0  # per convolution kernel
CONV_KERNEL = "igemm_fwd_gtcx35_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wt1x2_gkgs"
FC_IN, FC_OUT, FC_TOKENS = 2048, 1000, N  # the classifier GEMM, modelled from its shapes
FC_US = 2.0  # ~0.8 µs at the MI300X memory roof: well within it


def _write(path: Path, events: list[dict[str, Any]], **header: Any) -> Path:
    document = {
        "schemaVersion": 1,
        "deviceProperties": [DEVICE],
        **header,
        "traceEvents": _metadata() + events,
        "traceName": "rooflens_synthetic_case",
        "displayTimeUnit": "ms",
    }
    return write_document(Path(path), document)


def write_no_shapes_trace(path: Path, *, seed: int = 0) -> Path:
    """The sample step with every operator's shape, dtype, stride and value args removed."""
    step = _Step(seed)
    _record_step(step, layers=2, mlp_module=False)
    for event in step.events:
        for key in SHAPE_ARGS:
            event.get("args", {}).pop(key, None)
    return _write(path, step.events, record_shapes=0, with_stack=1)


def _conv_layer(step: _Step, layer: int) -> None:
    x, w = [N, C_IN, HW, HW], [C_OUT, C_IN, K, K]
    dims, types = [x, w, [], [], [], [], []], [BF16, BF16, "", "GenericList", "GenericList",
                                               "GenericList", "Scalar"]  # fmt: skip
    with (
        step.module(f"Conv2d_{layer}"),
        step.op("aten::conv2d", dims, types),
        step.op("aten::convolution", dims, types),
        step.op("aten::_convolution", dims, types),
    ):
        step.launch(CONV_KERNEL, CONV_US)


def _old_format(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """2021 spellings, no flows, no Concrete Inputs or Input Strides."""
    out = []
    for event in events:
        if event.get("ph") in ("s", "f"):
            continue
        event = dict(event, cat=OLD_CATEGORIES.get(event["cat"], event["cat"]))
        if "args" in event:
            args = {k: v for k, v in event["args"].items() if k not in SHAPE_ARGS[2:]}
            event["args"] = args
        out.append(event)
    return out


def write_2021_conv_trace(path: Path, *, seed: int = 0) -> Path:
    """Three stride-2 convolutions and a classifier GEMM in one ProfilerStep, 2021-style."""
    step = _Step(seed)
    with step.span("user_annotation", "ProfilerStep#1"), step.module("ResNetStem_0"):
        for layer in range(CONV_LAYERS):
            _conv_layer(step, layer)
        with step.op(
            "aten::addmm",
            [[FC_OUT], [FC_TOKENS, FC_IN], [FC_IN, FC_OUT], [], []],
            [BF16, BF16, BF16, "Scalar", "Scalar"],
        ):
            step.launch(GEMM, FC_US)
    return _write(path, _old_format(step.events))
