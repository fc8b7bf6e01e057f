"""Host-bound training whose GPU idles while the host does named work.

* `write_optimizer_gap_trace`: `Optimizer.step#Shampoo.step` holds the host 57-64 ms a step,
  launching four small kernels;
* `write_launch_bound_trace`: a small MLP whose 9 µs kernels are shorter than their 17 µs
  launch calls, each launched into an empty queue.

Timing is exact; each plan's docstring works the planted answer out (planted.py
defines the terms). The seed draws the stated ranges and moves the clock and pid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100, MI300X, Vendor
from .idle import (
    BACKWARD_FRAMES,
    START_US,
    TrainingPlan,
    launch_training,
    total_ms,
)
from .kernels import (
    ADD_BF16,
    ADD_F32,
    FUSED_ADAM,
    RELU_F32,
    THRESHOLD_F32,
    paced,
    seeded,
)
from .planted import ACTIONS, Planted, ms
from .writer import Timing, Writer


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


SMALL_GEMM = "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x32_warpgroupsize1x1x1_cublas"


@dataclass(frozen=True)
class LaunchBoundPlan:
    """A small MLP whose kernels are shorter than their own launch calls. Launch calls take
    `call_us` and an idle GPU starts a kernel `latency_us` after its call begins; operators
    are `op_us` apart: `forward` on the main thread, `backward` on the autograd thread, then
    one fused AdamW under `Optimizer.step#Adam.step` ([o, o + 29 µs]). Kernel i lasts
    `kernel_us[i % 7]` (median 9 µs; AdamW's 9 µs too) and starts 20 µs after its operator,
    so each ends before the next is launched: the queue is never more than one deep.

    Each iteration (N = forward + backward + 1 operators) lasts N x op_us and idles
    N x op_us - its kernels' time: 20 µs of it inside the optimizer's annotation before
    AdamW starts (optimizer_step), the rest between kernels shorter than their launch calls
    (launch_bound). The first iteration starts the GPU window 20 µs in; the last ends it
    1 µs early (AdamW ends at o + 29 µs)."""

    steps: int = 3
    forward: int = 90
    backward: int = 100
    kernel_us: tuple[float, ...] = (9.0, 7.0, 11.0, 9.0, 8.0, 10.0, 9.0)
    adam_us: float = 9.0
    op_us: float = 30.0
    call_us: float = 17.0
    latency_us: float = 12.0
    first_step: int = 0

    @property
    def ops(self) -> int:
        return self.forward + self.backward + 1

    def durations(self) -> list[float]:
        """One iteration's kernels, in launch order."""
        n = self.forward + self.backward
        return [self.kernel_us[i % len(self.kernel_us)] for i in range(n)] + [self.adam_us]

    def idle_us(self, k: int) -> dict[str, float]:
        idle = self.ops * self.op_us - sum(self.durations())
        if k == 0:
            idle -= 8.0 + self.latency_us
        if k == self.steps - 1:
            idle -= self.op_us - 8.0 - self.latency_us - self.adam_us
        return {"launch_bound": idle - 8.0 - self.latency_us, "optimizer_step": 8.0 + 12.0}


LAUNCH_BOUND_MLP = LaunchBoundPlan()


def write_launch_bound_trace(
    path: Path, *, seed: int = 0, plan: LaunchBoundPlan = LAUNCH_BOUND_MLP
) -> Path:
    """A launch-bound small MLP (LAUNCH_BOUND_MLP), on H100."""
    return launch_bound_writer(seed, plan).write(path, "launch_bound_small_mlp")


def launch_bound_writer(seed: int, plan: LaunchBoundPlan) -> Writer:
    """The events of `write_launch_bound_trace`, not yet written."""
    _, pid, t = seeded(seed)
    timing = Timing(call_us=plan.call_us, latency_us=plan.latency_us)
    w, p = Writer(device=H100, host_pid=pid, main_tid=pid, timing=timing), plan
    bwd, first = w.thread(pid + 17, "pt_autograd_0"), t
    names = (("aten::linear", SMALL_GEMM), ("aten::relu", RELU_F32), ("aten::add", ADD_F32))
    grads = (
        ("autograd::engine::evaluate_function: AddmmBackward0", SMALL_GEMM),
        ("autograd::engine::evaluate_function: ReluBackward0", THRESHOLD_F32),
    )
    for k in range(p.steps):
        dur = p.durations()
        fwd = [(*names[i % 3], dur[i]) for i in range(p.forward)]
        host, _ = paced(w, t, fwd, p.op_us)
        w.frame("nn.Module: MLP_0", t, host)
        back = [(*grads[i % 2], dur[p.forward + i]) for i in range(p.backward)]
        o, _ = paced(w, host, back, p.op_us, tid=bwd)
        for depth, name in enumerate(BACKWARD_FRAMES):
            w.frame(name, host + depth * 0.2, o - depth * 0.2)
        w.annotation("Optimizer.step#Adam.step", o, o + 29.0)
        w.launching_op("aten::_fused_adam_", FUSED_ADAM, o, p.adam_us)
        end = o + p.op_us
        w.step(p.first_step + k, t, end)
        w.frame("train.py(33): train_step", t, end)
        t = end
    w.frame("train.py(60): main", first - 2.0, t + 2.0)
    return w


def launch_bound_planted(plan: LaunchBoundPlan = LAUNCH_BOUND_MLP) -> Planted:
    idle = total_ms([plan.idle_us(k) for k in range(plan.steps)])
    return Planted(
        p1="idle",
        cause="launch_bound",
        call_site="cudaLaunchKernel",
        caller="aten::linear",
        action=ACTIONS["launch_bound"],
        idle_by_cause_ms=ms(idle),
        steady_iterations=tuple(range(plan.steps)),
        step_ms=(round(plan.ops * plan.op_us / 1e3, 6),) * plan.steps,
        estimate_ms=(round(idle["launch_bound"], 6),) * 2,
        notes=f"Kernels (median 9 µs) are shorter than their launch calls ({plan.call_us:g} "
        "µs) and the queue never holds more than one: capture the step in a CUDA graph or "
        'torch.compile(mode="reduce-overhead").',
    )
