"""Host-bound training whose GPU idles while the host does named work.

* `write_optimizer_gap_trace`: `Optimizer.step#Shampoo.step` holds the host 57-64 ms a step,
  launching four small kernels.

Timing is exact; each plan's docstring works the planted answer out (synthetic_planted.py
defines the terms). The seed draws the stated ranges and moves the clock and pid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflens.analyzers.trace.synthetic_devices import H100, MI300X, Vendor
from rooflens.analyzers.trace.synthetic_idle import (
    START_US,
    TrainingPlan,
    launch_training,
    total_ms,
)
from rooflens.analyzers.trace.synthetic_kernels import ADD_BF16, seeded
from rooflens.analyzers.trace.synthetic_planted import ACTIONS, Planted, ms
from rooflens.analyzers.trace.synthetic_writer import Writer


@dataclass(frozen=True)
class OptimizerGapPlan:
    """Iteration k starts at t_k with the step's launches (`train`, no foreach optimizer),
    then `Optimizer.step#Shampoo.step` holds the host `optimizer_us(seed)[k]` (57-64 ms),
    launching a `kernel_us` kernel at each of `kernel_at_us` (the GPU is idle: each starts
    18 µs after its operator); the next iteration starts when it returns. The step's work
    ends `train.lag_us` into the optimizer. Per iteration: optimizer_step = optimizer -
    lag_us - 4 x kernel_us, dispatch 18 µs (the step's first copy; not in the first
    iteration, which starts the GPU window). The last iteration's GPU window ends with its
    last optimizer kernel."""

    train: TrainingPlan
    steps: int = 6
    optimizer_range_us: tuple[float, float] = (57_000.0, 64_000.0)
    kernel_at_us: tuple[float, ...] = (5_000.0, 20_000.0, 35_000.0, 50_000.0)
    kernel_us: float = 30.0
    first_step: int = 40

    def optimizer_us(self, seed: int) -> list[float]:
        rng = seeded(seed)[0]
        return [float(round(rng.uniform(*self.optimizer_range_us))) for _ in range(self.steps)]

    def idle_us(self, seed: int) -> list[dict[str, float]]:
        busy = self.train.lag_us + len(self.kernel_at_us) * self.kernel_us
        qs = self.optimizer_us(seed)
        qs[-1] = self.kernel_at_us[-1] + START_US + self.kernel_us  # the GPU's last event ends
        return [
            {"optimizer_step": q - busy, "dispatch": START_US if k else 0.0}
            for k, q in enumerate(qs)
        ]


OPTIMIZER_GAP = OptimizerGapPlan(
    TrainingPlan(copy_us=100.0, gemms=20, gemm_us=100.0, per_gemm=2, optimizer=0)
)
SHAMPOO_FRAMES = (
    "torch/optim/optimizer.py(487): wrapper",
    "distributed_shampoo/distributed_shampoo.py(1180): step",
    "distributed_shampoo/distributed_shampoo.py(1050): _per_group_step_impl",
    "distributed_shampoo/utils/shampoo_preconditioner_list.py(610): update_preconditioners",
)


def write_optimizer_gap_trace(
    path: Path, *, seed: int = 0, vendor: Vendor = "nvidia", plan: OptimizerGapPlan = OPTIMIZER_GAP
) -> Path:
    """Shampoo's step holding the host between iterations (OPTIMIZER_GAP)."""
    _, pid, t = seeded(seed)
    w = Writer(
        device=MI300X if vendor == "amd" else H100, host_pid=pid, main_tid=pid, vendor=vendor
    )
    bwd, first = w.thread(pid + 17, "pt_autograd_0"), t
    for k, q in enumerate(plan.optimizer_us(seed)):
        o = launch_training(w, plan.train, t, bwd, vendor)
        w.annotation("Optimizer.step#Shampoo.step", o, o + q)
        for depth, name in enumerate(SHAMPOO_FRAMES):
            w.frame(name, o + 1.0 + depth, o + q - 1.0 - depth)
        for at in plan.kernel_at_us:
            w.launching_op("aten::mul_", ADD_BF16, o + at, plan.kernel_us)
        w.step(plan.first_step + k, t, o + q)
        w.frame("train.py(112): train_step", t, o + q)
        t = o + q
    w.frame("train.py(150): main", first - 2.0, t + 2.0)
    return w.write(path, "shampoo_optimizer_gap")


def optimizer_planted(plan: OptimizerGapPlan = OPTIMIZER_GAP, seed: int = 0) -> Planted:
    total = total_ms(plan.idle_us(seed))
    qs = plan.optimizer_us(seed)
    return Planted(
        p1="idle",
        cause="optimizer_step",
        call_site="Optimizer.step#Shampoo.step",
        action=ACTIONS["optimizer_step"],
        idle_by_cause_ms=ms(total),
        steady_iterations=tuple(range(plan.steps)),
        step_ms=tuple(round((plan.train.host_us + q) / 1e3, 6) for q in qs),
        estimate_ms=(round(total["optimizer_step"], 6),) * 2,
        notes=f"Shampoo's step holds the host {min(qs) / 1e3:g}-{max(qs) / 1e3:g} ms every "
        f"iteration with {len(plan.kernel_at_us)} small kernels; the GPU waits.",
    )
