"""Runs of one training step for the regression gate (compare/gate.py): the same model run
twice with its own run-to-run noise, optionally with one operator slowed down.

Each of `steps` iterations launches, per layer, a GEMM (`aten::mm`, `mm_us`), an add
(`aten::add`, `add_us`) and a softmax (`aten::_softmax`, `softmax_us`) and ends in a device
synchronise, so the step is the GPU's time. Noise: every kernel of an iteration takes
(1 + u) of its time, u uniform in ±`noise` per iteration, drawn from `seed`. `slow_pct` makes
the softmax kernels slower by that share of the whole step (planted: the gate must name
`aten::_softmax` first).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .kernels import NV_GEMM
from .writer import Writer

ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
SOFTMAX = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float>"
T0_US = 5_000_000.0


@dataclass(frozen=True)
class GatePlan:
    steps: int = 20
    layers: int = 10
    mm_us: float = 300.0
    add_us: float = 100.0
    softmax_us: float = 100.0
    op_us: float = 5.0
    noise: float = 0.0
    slow_pct: float = 0.0
    seed: int = 0

    @property
    def step_gpu_us(self) -> float:
        return self.layers * (self.mm_us + self.add_us + self.softmax_us)

    @property
    def slow_softmax_us(self) -> float:
        """The softmax kernel's time with the planted slowdown."""
        return self.softmax_us + self.slow_pct / 100 * self.step_gpu_us / self.layers


def write_gate_trace(path: Path, plan: GatePlan) -> Path:
    rng = random.Random(plan.seed)
    w = Writer(device=H100, host_pid=6060, main_tid=6060)
    t = T0_US
    for k in range(plan.steps):
        start = t
        scale = 1.0 + rng.uniform(-plan.noise, plan.noise)
        for _ in range(plan.layers):
            for op, kernel, us in (
                ("aten::mm", NV_GEMM, plan.mm_us),
                ("aten::add", ADD, plan.add_us),
                ("aten::_softmax", SOFTMAX, plan.slow_softmax_us),
            ):
                got = w.launching_op(op, kernel, t, us * scale)
                t = max(t + plan.op_us, got.call_end + w.timing.op_tail_us)
        t = w.sync(t) + 1.0
        w.step(k, start, t)
        t += 1.0
    return w.write(path, "gate")
