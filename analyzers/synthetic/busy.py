"""Traces whose GPU is busy: the first priority is what runs on it, not idle time.

* `write_fp32_bound_trace`: a V100 run without recorded shapes, 98.4 % busy, its launch queue
  full (1,024 kernels), every kernel fp32 on CUDA cores (`volta_sgemm_*`, `scudnn_*`,
  `<float>` elementwise): the priority is precision (AMP/bf16), not the 1.6 % idle;
* `write_compiled_copies_trace`: a compiled model whose device-to-device copies (93 ms, 95 %
  of them `aten::clone`/`aten::copy_` inside `CompiledFunction`/`CompiledFunctionBackward`)
  are the largest item on a GPU-bound step.

Timing is exact; each plan's docstring works the planted answer out (planted.py
defines the terms).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100, V100
from .idle import BACKWARD_FRAMES, START_US
from .kernels import D2D, ITEM, seeded, to_host
from .planted import Planted, ms
from .writer import Timing, Writer

SGEMM = "volta_sgemm_128x64_nn"
SCUDNN = "scudnn_128x64_relu_interior_nn_v1"
NCHW = "void cudnn::ops::nchwToNhwcKernel<float, float, float, false, true, (cudnn::dimOrder_t)0>"
BN_STATS = (
    "void at::native::batch_norm_collect_statistics_kernel<at::native::InvStd, float, float, "
    "float, 512>"
)
BN_APPLY = "void at::native::batch_norm_transform_input_kernel<float, float, float, true, int>"
RELU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail"
    "::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
    "{lambda(float)#1}, std::array<char*, 2ul> >"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >"
)
# One cycle of operators and the kernels each launches (µs).
FP32_CYCLE: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = (
    ("aten::cudnn_convolution", ((NCHW, 60.0), (SCUDNN, 700.0))),
    ("aten::native_batch_norm", ((BN_STATS, 150.0), (BN_APPLY, 90.0))),
    ("aten::relu_", ((RELU, 50.0),)),
    ("aten::mm", ((SGEMM, 640.0),)),
    ("aten::add_", ((ADD, 60.0),)),
)


@dataclass(frozen=True)
class Fp32BoundPlan:
    """Operators `op_us` apart launching the kernels of FP32_CYCLE (1,750 µs of GPU work per
    cycle, seven kernels, each starting `gap_us` after the previous ends: the GPU's own
    spacing). Iteration 0 launches `fill_cycles` cycles: the queue reaches `queue_limit`
    not-started kernels, after which every launch call blocks until a kernel starts and
    frees a slot. The steady iterations (`cycles` cycles each) are paced by the GPU: the
    queue stays full, and their only idle is the gap before each kernel that starts in
    them, already queued (gpu_wait): 4 µs of every 1,754, 98.4 % busy. Shapes are not
    recorded; every kernel is fp32 on CUDA cores, the convolution and the GEMM 76.6 %."""

    steps: int = 3
    fill_cycles: int = 155
    cycles: int = 15
    gap_us: float = 4.0
    op_us: float = 10.0
    queue_limit: int = 1_024
    first_step: int = 20

    @property
    def kernels_per_cycle(self) -> int:
        return sum(len(kernels) for _, kernels in FP32_CYCLE)

    @property
    def cycle_us(self) -> float:
        return sum(us for _, kernels in FP32_CYCLE for _, us in kernels)

    def idle_us(self) -> float:
        """gpu_wait per steady iteration: one gap per kernel starting inside it."""
        return self.cycles * self.kernels_per_cycle * self.gap_us

    @property
    def busy_share(self) -> float:
        n = self.kernels_per_cycle
        return self.cycle_us / (self.cycle_us + n * self.gap_us)


FP32_BOUND = Fp32BoundPlan()


def write_fp32_bound_trace(path: Path, *, seed: int = 0, plan: Fp32BoundPlan = FP32_BOUND) -> Path:
    """A GPU-bound fp32 run without shapes (FP32_BOUND), on V100."""
    _, pid, t = seeded(seed)
    timing = Timing(gap_us=plan.gap_us, call_us=5.0)
    w = Writer(device=V100, host_pid=pid, main_tid=pid, timing=timing, queue_limit=plan.queue_limit)
    first = t
    for k in range(plan.steps):
        start = t
        for _ in range(plan.fill_cycles if k == 0 else plan.cycles):
            for name, kernels in FP32_CYCLE:
                w.op(name, t, t)
                op = w.events[-1]
                call = t + 3.0
                for kernel, us in kernels:
                    call = w.launch(kernel, call, us).call_end + 2.0
                op["dur"] = round(round(call + 1.0, 3) - op["ts"], 3)
                t = max(t + plan.op_us, call + 3.0)
        w.frame("nn.Module: ResNet50_0", start, t - 0.5)
        w.step(plan.first_step + k, start, t)
        w.frame("train.py(57): train_step", start, t)
    w.frame("train.py(101): main", first - 2.0, t + 2.0)
    return w.write(path, "gpu_bound_fp32_no_shapes", cuda_runtime_version=11040)


def fp32_planted(plan: Fp32BoundPlan = FP32_BOUND) -> Planted:
    steady = range(1, plan.steps)
    idle = len(steady) * plan.idle_us() / 1e3
    return Planted(
        p1="compute",
        cause=None,
        call_site=SCUDNN,
        caller="aten::cudnn_convolution",
        action="precision",
        idle_by_cause_ms=ms({"gpu_wait": idle}),
        steady_iterations=tuple(steady),
        warmup_iterations=(0,),
        notes=f"The GPU is {100 * plan.busy_share:.1f} % busy with its launch queue full "
        f"({plan.queue_limit} kernels): compute first. Every kernel is fp32 on CUDA cores "
        "(volta_sgemm, scudnn, <float> elementwise): AMP/bf16 and channels_last, read from the "
        "kernel names since no shapes were recorded; the idle is not a priority.",
    )


@dataclass(frozen=True)
class CompiledCopiesPlan:
    """A compiled training step on H100. Iteration k starts at t_k: `CompiledFunction`
    launches, `op_us` apart, `triton` Triton kernels (`triton_us`) with a `clone` (aten::clone
    > aten::copy_ > cudaMemcpyAsync, a `copy_bytes` DtoD copy of `copy_us`) after every
    `every`-th; `CompiledFunctionBackward` (autograd thread) does the same; the optimizer
    copies `eager` EMA buffers with plain `aten::copy_` (`eager_us` each); `loss.item()`
    then waits for the GPU, which has run everything back to back. Per iteration the GPU
    idles 18 µs at its start (dispatch; not the first) and 9 µs at its end (sync; not the
    last); the copies take 24 x 920 + 2 x 581.25 µs, 95.0 % of them compiled: over the four
    iterations 92.97 ms of DtoD copies, 88.32 ms from the compiled regions."""

    steps: int = 4
    triton: int = 24
    triton_us: float = 1_250.0
    every: int = 2
    copy_us: float = 920.0
    copy_bytes: int = 536_870_912
    eager: int = 2
    eager_us: float = 581.25
    op_us: float = 25.0
    first_step: int = 3

    @property
    def compiled_copies(self) -> int:
        return 2 * self.triton // self.every

    @property
    def copies_ms(self) -> tuple[float, float]:
        """(compiled, all) DtoD copy time over every iteration."""
        compiled = self.steps * self.compiled_copies * self.copy_us / 1e3
        return compiled, compiled + self.steps * self.eager * self.eager_us / 1e3

    def idle_us(self, k: int) -> dict[str, float]:
        last = k == self.steps - 1
        return {"dispatch": START_US if k else 0.0, "sync": 0.0 if last else 9.0}


COMPILED_COPIES = CompiledCopiesPlan()
TRITON_FWD = "triton_per_fused__to_copy_add_native_layer_norm_{}"
TRITON_BWD = "triton_red_fused__to_copy_native_layer_norm_backward_{}"


def _compiled(w: Writer, p: CompiledCopiesPlan, t: float, names: tuple[str, str], tid: int):
    """A compiled region from `t` on `tid`; returns when its last launch has returned."""
    region, kernel = names
    s = t
    for i in range(p.triton):
        w.launch(kernel.format(i % 9), s + 8.0, p.triton_us, tid=tid, api="cuLaunchKernel")
        s += p.op_us
        if i % p.every == p.every - 1:
            w.op("aten::clone", s, s + 20.0, tid)
            w.launching_op("aten::copy_", D2D, s + 1.0, p.copy_us, tid=tid, nbytes=p.copy_bytes)
            s += p.op_us
    w.op(region, t, s, tid)
    return s


def write_compiled_copies_trace(
    path: Path, *, seed: int = 0, plan: CompiledCopiesPlan = COMPILED_COPIES
) -> Path:
    """Compiled-region device-to-device copies (COMPILED_COPIES), on H100."""
    _, pid, t = seeded(seed)
    w, p, first = Writer(device=H100, host_pid=pid, main_tid=pid), plan, t
    bwd = w.thread(pid + 17, "pt_autograd_0")
    for k in range(p.steps):
        f = _compiled(w, p, t, ("CompiledFunction", TRITON_FWD), pid)
        w.op("autograd::engine::evaluate_function: CompiledFunctionBackward", f, f + 1.0, bwd)
        b = _compiled(w, p, f + 1.0, ("CompiledFunctionBackward", TRITON_BWD), bwd)
        for depth, name in enumerate(BACKWARD_FRAMES):
            w.frame(name, f + depth * 0.2, b - depth * 0.2)
        w.annotation("Optimizer.step#AdamW.step", b, b + p.eager * p.op_us)
        for i in range(p.eager):
            w.launching_op(
                "aten::copy_", D2D, b + i * p.op_us, p.eager_us, nbytes=p.copy_bytes // 2
            )
        end = to_host(w, b + p.eager * p.op_us, 4, 2.0, names=ITEM)
        w.step(p.first_step + k, t, end)
        w.frame("train.py(71): train_step", t, end)
        t = end
    w.frame("train.py(140): main", first - 2.0, t + 2.0)
    return w.write(path, "compiled_region_dtod_copies")


def compiled_copies_planted(plan: CompiledCopiesPlan = COMPILED_COPIES) -> Planted:
    compiled, _ = plan.copies_ms
    idle: dict[str, float] = {}
    for k in range(plan.steps):
        for cause, us in plan.idle_us(k).items():
            idle[cause] = idle.get(cause, 0.0) + us / 1e3
    return Planted(
        p1="copies",
        cause=None,
        call_site="aten::clone",
        caller="CompiledFunction",
        action="compiled_region_copies",
        idle_by_cause_ms=ms(idle),
        steady_iterations=tuple(range(plan.steps)),
        estimate_ms=(round(compiled, 6),) * 2,
        notes="Device-to-device copies take 92.97 ms, 95.0 % of them aten::clone > "
        "aten::copy_ inside CompiledFunction/CompiledFunctionBackward: the compiled graph "
        "clones its inputs/outputs (mutated or non-contiguous); name the source, not a "
        "checklist.",
    )
