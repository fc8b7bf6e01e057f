"""Kineto traces of compute-side situations with known answers, for the truth corpus.

Two small training loops on one H100 SXM (989 TFLOPS bf16 matrix, 3,350 GB/s), every operator
recorded with its shapes, so each kernel's roofline time follows from the shapes alone and its
efficiency from the planted duration:

* `write_elementwise_bound_trace`: per layer one 4096³ bf16 GEMM near its roof and three
  elementwise adds of two 4096² bf16 tensors at a fifth of the memory roof, which hold most of
  the GPU's time; the GPU never idles;
* `write_gemm_bound_trace`: per layer one 4096³ GEMM at 95 % of its roof and one add near the
  memory roof; the data loader leaves the GPU idle between iterations.

Roofline times (docs/perf-models.md): the GEMM does 2·4096³ FLOPs (138.97 µs at 989 TFLOPS)
and moves 3·4096²·2 bytes (30.05 µs); the add moves the same bytes (two inputs read, one
output written) for 4096² FLOPs, so 30.05 µs on the memory roof. Timing is exact (no
jitter); the layout of a step is described with `ModelPlan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .host import (
    ADD,
    BASE_US,
    GEMM,
    HOST_PID,
    MAIN_TID,
    _write,
    _Writer,
)

BF16 = "c10::BFloat16"
SIDE = 4096  # every tensor is SIDE x SIDE bf16
MM_SHAPES = ([[SIDE, SIDE], [SIDE, SIDE]], [BF16, BF16])
ADD_SHAPES = ([[SIDE, SIDE], [SIDE, SIDE], []], [BF16, BF16, "Scalar"])
PEAK_TFLOPS, HBM_GBPS = 989.0, 3350.0  # the H100_SXM platform's matrix_bf16 and bandwidth
PLATFORM = "H100_SXM"


@dataclass(frozen=True)
class ModelPlan:
    """Step k starts at k * period: the data loader holds the host for `load_us`, then each
    of `layers` layers launches one aten::mm (`gemm_us` kernel) and `adds` aten::add
    (`add_us` kernels each), an operator every `op_us`. Kernels are longer than `op_us`, so
    within a step the queue never empties and the GPU runs the step's kernels back to
    back."""

    steps: int = 3
    period_us: float = 2_000.0
    load_us: float = 100.0
    layers: int = 4
    adds: int = 3
    op_us: float = 20.0
    gemm_us: float = 160.0
    add_us: float = 150.0

    @property
    def gpu_us(self) -> float:
        """GPU busy time of one step."""
        return self.layers * (self.gemm_us + self.adds * self.add_us)


# Elementwise-bound: 12 GEMMs at 86.9 % and 36 adds at 20.0 % of their roofs; the next step's
# first kernel is launched (2,108 µs in) before this step's 2,440 µs of GPU work ends.
ELEMENTWISE_BOUND = ModelPlan()
# GEMM-bound: 24 GEMMs at 95.2 % and 24 adds at 93.9 %; a step's 1,424 µs of GPU work starts
# 268 µs into its 1,700 µs period, so the GPU idles 276 µs between consecutive iterations.
GEMM_BOUND = ModelPlan(
    period_us=1_700.0, load_us=250.0, layers=8, adds=1, gemm_us=146.0, add_us=32.0
)


def gemm_roofline_us() -> float:
    """Roofline time of one 4096³ bf16 GEMM on the plan's platform (compute-bound)."""
    return max(2 * SIDE**3 / (PEAK_TFLOPS * 1e6), 3 * SIDE * SIDE * 2 / (HBM_GBPS * 1e3))


def add_roofline_us() -> float:
    """Roofline time of one 4096² bf16 add (memory-bound)."""
    return max(SIDE * SIDE / (134.0 * 1e6), 3 * SIDE * SIDE * 2 / (HBM_GBPS * 1e3))


def _model_step(w: _Writer, p: ModelPlan, t: float) -> None:
    at = t + p.load_us
    loader = "enumerate(DataLoader)#_DataLoaderIter.__next__"
    w.x("user_annotation", loader, t, p.load_us - 5.0, HOST_PID, MAIN_TID)
    for _ in range(p.layers):
        w.launching_op("aten::mm", GEMM, at, p.op_us, p.gemm_us, shapes=MM_SHAPES)
        at += p.op_us
        for _ in range(p.adds):
            w.launching_op("aten::add", ADD, at, p.op_us, p.add_us, shapes=ADD_SHAPES)
            at += p.op_us


def write_model_trace(path: Path, plan: ModelPlan, *, profiler_steps: bool = True) -> Path:
    """A training loop following `plan`, each step marked `ProfilerStep#N` unless told not."""
    w = _Writer()
    for k in range(plan.steps):
        t = BASE_US + k * plan.period_us
        w.step(k, t, t + plan.period_us, profiler_steps)
        _model_step(w, plan, t)
    return _write(path, w)


def write_elementwise_bound_trace(path: Path, *, profiler_steps: bool = True) -> Path:
    """Elementwise adds far below the memory roof hold most of the time (ELEMENTWISE_BOUND)."""
    return write_model_trace(path, ELEMENTWISE_BOUND, profiler_steps=profiler_steps)


def write_gemm_bound_trace(path: Path, *, profiler_steps: bool = True) -> Path:
    """GEMMs at 95 % of their roof, idle between iterations (GEMM_BOUND)."""
    return write_model_trace(path, GEMM_BOUND, profiler_steps=profiler_steps)
