"""Traces whose window holds more than the steady loop, or less than one iteration.

* `write_warmup_trace`: a benchmark whose first forward spends 10 s in `cudaFree` inside the
  first cuDNN convolution, 1.5 s in `cudaMalloc`, creates streams and loads modules; the
  warm-up is 98.5 % of the window, the steady iterations are GPU-bound;
* `write_gpu_wait_trace`: the GPU waits 64 ms a step on a side stream's event (itself
  waiting on a peer) with hundreds of kernels queued, while the host sits in a blocking
  704-byte `.to("cpu")`; the profiler's closing `cudaDeviceSynchronize` runs ~101 ms;
* `write_tiny_kernel_trace`: one 1.76 µs Triton kernel is the whole GPU window, and a stray
  `ProfilerStep#` on another thread, with no GPU work, lasts 13.3 s.

Timing is exact; each plan's docstring works the planted answer out (planted.py
defines the terms).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .idle import BACKWARD_FRAMES, START_US
from .kernels import (
    COPY_KERNEL,
    FOREACH_ADD,
    H2D_PAGEABLE,
    NV_CONV,
    NV_CONV_DGRAD,
    NV_GEMM,
    RELU_BF16,
    paced,
    seeded,
    to_host,
)
from .planted import ACTIONS, Planted, ms
from .writer import Writer

BN = (
    "void cudnn::bn_fw_inf_1C11_kernel_NCHW<__nv_bfloat16, float, true, 1>(float, float, "
    "cudnnTensorStruct, __nv_bfloat16 const*, cudnnTensorStruct, __nv_bfloat16*, "
    "cudnnTensorStruct, float const*, float const*, float const*, float const*, float)"
)
CONV_OPS = ("aten::conv2d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution")


@dataclass(frozen=True)
class WarmupPlan:
    """Iteration 0 (warm-up) starts at t_0: `aten::to` copies the input from pageable
    memory (`copy_us`, on the GPU 18 µs in, the call returning 5 µs after it lands); at
    t_0 + 530 µs the first convolution (conv2d > ... > cudnn_convolution) calls cudaFree
    10 µs in (`free_us`), creates two streams, loads the cuDNN module and takes three
    cudaMallocs (`init_us` in all), then launches its kernel with a `first_launch_us` call
    (the kernel starts as the call returns) and the next operator starts 25 µs after it.
    The first BatchNorm and the first ReLU launch with `slow_launch_us` calls (8 µs in; the
    kernel starts as the call returns, the next operator 11 µs later); the other 27
    operators are 25 µs apart and queue. A device synchronise waits for
    the GPU and the iteration ends 2 µs after it returns.

    Iterations 1..: 30 operators 25 µs apart (a convolution, a BatchNorm, a ReLU, in turn:
    `conv_us`, `bn_us`, `relu_us`), back to back on the GPU from 18 µs in, then
    `torch.cuda.synchronize()` returning 5 µs after the GPU drains, and 2 µs later the next
    iteration. Each steady iteration lasts 18 + 22,000 + 7 µs and idles 18 µs at its start
    (dispatch) and 5 (sync) + 2 (dispatch) µs at its end, but the last, whose end is past
    the GPU window. The warm-up idles for everything but its copy and kernels: see
    `warmup_idle_us`."""

    steps: int = 9
    copy_us: float = 500.0
    free_us: float = 10_000_000.0
    init_us: float = 10_000_000.0 + 2 * 15_000.0 + 180_000.0 + 1_500_000.0
    first_launch_us: float = 45_000.0
    slow_launch_us: float = 12_000.0
    conv_us: float = 1_800.0
    bn_us: float = 300.0
    relu_us: float = 100.0
    ops: int = 30
    first_step: int = 1

    def durations(self) -> list[float]:
        return [(self.conv_us, self.bn_us, self.relu_us)[i % 3] for i in range(self.ops)]

    @property
    def steady_step_us(self) -> float:
        return START_US + sum(self.durations()) + 7.0

    @property
    def warmup_step_us(self) -> float:
        first = 530.0 + 10.0 + self.init_us + self.first_launch_us + 25.0
        slow = 2 * (self.slow_launch_us + 19.0)  # call, then 8 + 3 + 8 µs around it
        return first + slow - 11.0 + sum(self.durations()[2:]) + 7.0

    @property
    def warmup_idle_us(self) -> float:
        """Idle of iteration 0 inside the GPU window (which opens with its copy)."""
        return self.warmup_step_us - START_US - self.copy_us - sum(self.durations())

    def idle_us(self, k: int) -> dict[str, float]:
        last = k == self.steps - 1
        return {"dispatch": START_US + (0.0 if last else 2.0), "sync": 0.0 if last else 5.0}


WARMUP = WarmupPlan()
INIT_CALLS = (  # (name, µs) after the cudaFree
    ("cudaStreamCreateWithPriority", 15_000.0),
    ("cudaStreamCreateWithPriority", 15_000.0),
    ("cuModuleLoadData", 180_000.0),
    ("cudaMalloc", 500_000.0),
    ("cudaMalloc", 450_000.0),
    ("cudaMalloc", 550_000.0),
)


def _first_conv(w: Writer, p: WarmupPlan, c: float, dur: float) -> float:
    """The first convolution from `c`; returns when the next operator starts."""
    ops = []
    for depth, name in enumerate(CONV_OPS):
        w.op(name, c + 0.5 * depth, c + 0.5 * depth)
        ops.append(w.events[-1])
    at = w.runtime("cudaFree", c + 10.0, p.free_us)
    for name, us in INIT_CALLS:
        at = w.runtime(name, at, us)
    got = w.launch(NV_CONV, at, dur, call_us=p.first_launch_us, after=at + p.first_launch_us)
    for depth, event in enumerate(ops):
        event["dur"] = round(round(got.call_end + 3.0 - 0.5 * depth, 3) - event["ts"], 3)
    return got.call_end + 25.0


def _warmup_forward(w: Writer, p: WarmupPlan, t: float) -> float:
    """Iteration 0 from `t`; returns the time the device synchronise is called."""
    w.op("aten::to", t, t + 526.0)
    w.op("aten::copy_", t + 2.0, t + 524.0)
    w.copy(H2D_PAGEABLE, t + 8.0, 6_422_528, p.copy_us, blocking=True)
    dur = p.durations()
    s = _first_conv(w, p, t + 530.0, dur[0])
    for i, (name, kernel) in enumerate((("aten::batch_norm", BN), ("aten::relu_", RELU_BF16))):
        w.op(name, s, s + 8.0 + p.slow_launch_us + 3.0)
        got = w.launch(
            kernel, s + 8.0, dur[i + 1], call_us=p.slow_launch_us, after=s + 8.0 + p.slow_launch_us
        )
        s = got.call_end + 3.0 + 8.0
    rest = [(*_steady_op(i), dur[i]) for i in range(3, p.ops)]
    end, _ = paced(w, s, rest, 25.0)
    return end


def _steady_op(i: int) -> tuple[str, str]:
    return (
        ("aten::cudnn_convolution", NV_CONV),
        ("aten::batch_norm", BN),
        ("aten::relu_", RELU_BF16),
    )[i % 3]


def write_warmup_trace(path: Path, *, seed: int = 0, plan: WarmupPlan = WARMUP) -> Path:
    """A benchmark whose window is mostly its warm-up (WARMUP), on H100."""
    _, pid, t = seeded(seed)
    w, p, first = Writer(device=H100, host_pid=pid, main_tid=pid), plan, t
    for k in range(p.steps):
        if k == 0:
            sync_at = _warmup_forward(w, p, t)
        else:
            ops = [(*_steady_op(i), d) for i, d in enumerate(p.durations())]
            sync_at, _ = paced(w, t, ops, 25.0)
        w.frame("nn.Module: ResNet_0", t, sync_at)
        end = w.sync(sync_at) + 2.0
        w.step(p.first_step + k, t, end)
        w.frame("bench.py(41): run_iteration", t, end)
        t = end
    w.frame("bench.py(88): main", first - 2.0, t + 2.0)
    return w.write(path, "warmup_in_window")


def warmup_planted(plan: WarmupPlan = WARMUP) -> Planted:
    steady = range(1, plan.steps)
    idle = {c: sum(plan.idle_us(k)[c] for k in steady) / 1e3 for c in ("dispatch", "sync")}
    step = (plan.warmup_step_us,) + (plan.steady_step_us,) * (plan.steps - 1)
    return Planted(
        p1="compute",
        cause=None,
        call_site="aten::cudnn_convolution",
        caller="nn.Module: ResNet_0",
        action=None,
        idle_by_cause_ms=ms(idle),
        steady_iterations=tuple(steady),
        warmup_iterations=(0,),
        step_ms=tuple(round(s / 1e3, 6) for s in step),
        excluded_idle_ms=ms({"warmup": plan.warmup_idle_us / 1e3}),
        notes="The first iteration spent 10 s in cudaFree under aten::cudnn_convolution, "
        "1.5 s in cudaMalloc, stream creation and module loading: one-time initialisation, "
        "excluded. The steady iterations are 99.9 % busy, 82 % of it convolutions: "
        "compute comes first and there is no idle saving.",
    )


SIDE_STREAM = 20


@dataclass(frozen=True)
class GpuWaitPlan:
    """A pipeline stage whose compute stream waits on a side stream that receives the
    previous stage's activations. Iteration k starts at t_k: cudaStreamWaitEvent puts the
    peer's event (recorded in another process, done at R_k) on the side stream (5 µs in);
    a copy kernel (`side_us`) is launched there (10 µs in) and an event recorded after it
    (40 µs), which the compute stream waits on (45 µs). From t_k + 50 µs, `forward`
    kernels (`forward_us`) 25 µs apart; then `.to("cpu")` of a 704-byte tensor: a DtoH copy
    into pageable memory, which cannot return before its data lands, behind the whole
    forward (so the host blocks); 11 µs after the copy lands the autograd thread launches
    `backward` kernels (`backward_us`) 25 µs apart and the main thread three optimizer
    adds (`optimizer_us`); the iteration ends when they are launched.

    The peer's event is done `gap_us` after the compute stream's previous work ends (G_k),
    so the GPU idles exactly `gap_us` from G_k, and the kernel ending that gap (the side
    copy) was launched ~98 ms before it began: a GPU-side wait (gpu_wait), while the host
    was blocked in the copy (the GPU resumes first). The queue then holds the forward and
    the rest of the backward, over a hundred deep: launch-to-start delays have a median of
    167.1 ms (`delays_us`). After
    the copy lands: 5 µs in the blocking call (sync), 6 µs returning from aten::copy_/
    _to_copy/to and 18 µs to the first backward kernel (dispatch). Iteration 0 fills the
    queue (the peer is done 64 ms after t_0, before the GPU window), so it is warm-up.
    After the last iteration the profiler's closing cudaDeviceSynchronize (10 µs after it)
    waits ~101 ms for the last backward: the GPU is busy throughout, none of it idle."""

    steps: int = 5
    gap_us: float = 64_000.0
    side_us: float = 50.0
    forward: int = 100
    forward_us: float = 100.0
    backward: int = 40
    backward_us: float = 2_530.0
    optimizer: int = 3
    optimizer_us: float = 300.0
    copy_bytes: int = 704
    copy_us: float = 2.0
    first_step: int = 12

    @property
    def after_copy_us(self) -> float:
        """From the copy landing to the next iteration's start (host)."""
        return 11.0 + (self.backward + self.optimizer) * 25.0

    @property
    def step_us(self) -> float:
        """A steady iteration: the gap, the side copy, the forward, the 704-byte copy, the
        29 µs before the backward, backward and optimizer on the GPU."""
        forward = self.side_us + self.forward * self.forward_us + self.copy_us
        return (
            self.gap_us
            + forward
            + 29.0
            + self.backward_us * self.backward
            + (self.optimizer * self.optimizer_us)
        )

    @property
    def first_step_us(self) -> float:
        forward = self.side_us + self.forward * self.forward_us + self.copy_us
        return self.gap_us + forward + self.after_copy_us

    def delays_us(self) -> list[float]:
        """Launch-call start to kernel start of every kernel of a steady iteration: each
        operator calls the runtime 8 µs in; the peer's event is done at r from t_k, the
        704-byte copy lands at c."""
        gpu_tail = 29.0 + self.backward * self.backward_us + self.optimizer * self.optimizer_us
        r = gpu_tail - self.after_copy_us + self.gap_us  # G_k - t_k, then the gap
        side = [r - 18.0]
        forward = [
            r + self.side_us + i * self.forward_us - (58.0 + 25.0 * i) for i in range(self.forward)
        ]
        c = r + self.side_us + self.forward * self.forward_us  # the copy's start
        copy = [c - (50.0 + 25.0 * self.forward + 8.0)]
        backward = [29.0 + i * (self.backward_us - 25.0) - 19.0 for i in range(self.backward)]
        host = 11.0 + self.backward * 25.0 + 8.0  # the first optimizer call, from c
        optimizer = [
            gpu_tail - self.optimizer * self.optimizer_us + i * (self.optimizer_us - 25.0) - host
            for i in range(self.optimizer)
        ]
        return side + forward + copy + backward + optimizer

    @property
    def closing_sync_us(self) -> float:
        gpu_left = 29.0 + self.backward * self.backward_us + self.optimizer * self.optimizer_us
        return gpu_left + 5.0 - self.after_copy_us - 10.0


GPU_WAIT = GpuWaitPlan()
PROFILER_STOP = (
    "torch/profiler/profiler.py(754): __exit__",
    "torch/profiler/profiler.py(770): stop",
    "torch/profiler/profiler.py(869): _transit_action",
    "torch/profiler/profiler.py(229): stop_trace",
)


def _wait_step(w: Writer, p: GpuWaitPlan, t: float, peer: float, bwd: int) -> float:
    """Iteration from `t`, the peer's event done at `peer`; returns its end."""
    w.wait_event(t + 5.0, SIDE_STREAM, peer)
    w.frame("nn.Module: StageRecv_0", t + 10.0, t + 30.0)
    w.launching_op("aten::copy_", COPY_KERNEL, t + 10.0, p.side_us, stream=SIDE_STREAM)
    done = w.record_event(t + 40.0, SIDE_STREAM)
    w.wait_event(t + 45.0, 7, done)
    fwd = [("aten::linear", NV_GEMM, p.forward_us)] * p.forward
    host, _ = paced(w, t + 50.0, fwd, 25.0)
    w.frame("nn.Module: Stage_1", t + 50.0, host)
    back = to_host(w, host, p.copy_bytes, p.copy_us)
    w.frame("train.py(97): log_metrics", host, back)
    grads = [
        ("autograd::engine::evaluate_function: AddmmBackward0", NV_CONV_DGRAD, p.backward_us)
    ] * p.backward
    opt, _ = paced(w, back, grads, 25.0, tid=bwd)
    for depth, name in enumerate(BACKWARD_FRAMES):
        w.frame(name, back + depth * 0.2, opt - depth * 0.2)
    w.annotation("Optimizer.step#SGD.step", opt, opt + p.optimizer * 25.0)
    add = [("aten::_foreach_add_", FOREACH_ADD, p.optimizer_us)] * p.optimizer
    end, _ = paced(w, opt, add, 25.0)
    return end


def write_gpu_wait_trace(path: Path, *, seed: int = 0, plan: GpuWaitPlan = GPU_WAIT) -> Path:
    """A GPU waiting on its own side with a deep queue (GPU_WAIT), on H100."""
    _, pid, t = seeded(seed)
    w, p, first = Writer(device=H100, host_pid=pid, main_tid=pid), plan, t
    bwd = w.thread(pid + 17, "pt_autograd_0")
    for k in range(p.steps):
        peer = (t if k == 0 else w.free(7)) + p.gap_us
        end = _wait_step(w, p, t, peer, bwd)
        w.step(p.first_step + k, t, end)
        w.frame("train.py(88): train_step", t, end)
        t = end
    for depth, name in enumerate(PROFILER_STOP):
        w.frame(name, t + depth, t + 10.0 + p.closing_sync_us + 10.0 - depth)
    w.sync(t + 10.0)
    w.frame("train.py(140): main", first - 2.0, t + 30.0 + p.closing_sync_us)
    return w.write(path, "gpu_side_wait_deep_queue")


def gpu_wait_planted(plan: GpuWaitPlan = GPU_WAIT) -> Planted:
    steady = range(1, plan.steps)
    n = len(steady)
    idle = {"gpu_wait": n * plan.gap_us, "sync": n * 5.0, "dispatch": n * 24.0}
    return Planted(
        p1="idle",
        cause="gpu_wait",
        call_site="cudaStreamWaitEvent",
        caller="nn.Module: StageRecv_0",
        action=ACTIONS["gpu_wait"],
        idle_by_cause_ms=ms({c: us / 1e3 for c, us in idle.items()}),
        steady_iterations=tuple(steady),
        warmup_iterations=(0,),
        step_ms=(round(plan.first_step_us / 1e3, 6),) + (round(plan.step_us / 1e3, 6),) * n,
        estimate_ms=(round(idle["gpu_wait"] / 1e3, 6),) * 2,
        excluded_idle_ms=ms({"warmup": (5.0 + 24.0) / 1e3}),
        notes=f"The GPU idles {plan.gap_us / 1e3:g} ms a step on a cross-stream event (the "
        "side stream waits for a peer) with the next kernels already queued (median "
        f"launch-to-start {statistics.median(plan.delays_us()) / 1e3:.1f} ms): a GPU-side "
        "wait, not the host. The host's 704-byte DtoH .to() into pageable memory blocks "
        "because the GPU is behind, not the other way round. The profiler's closing "
        f"cudaDeviceSynchronize ({plan.closing_sync_us / 1e3:.1f} ms) is not workload idle.",
    )


@dataclass(frozen=True)
class TinyKernelPlan:
    """One compiled call launching a single `kernel_us` Triton kernel (the GPU window is that
    kernel), and on another thread a `ProfilerStep#` annotation with no GPU work lasting
    `stray_us`, far longer than everything else (~`host_us`). No iteration, nothing to
    rank."""

    kernel_us: float = 1.76
    stray_us: float = 13_336_000.0
    host_us: float = 2_400.0
    stray_step: int = 3


TINY_KERNEL = TinyKernelPlan()
TRITON_ONE = "triton_poi_fused_add_mul_0"


def write_tiny_kernel_trace(path: Path, *, seed: int = 0, plan: TinyKernelPlan = TINY_KERNEL):
    """One tiny kernel and a stray step annotation (TINY_KERNEL), on H100."""
    _, pid, t = seeded(seed)
    w = Writer(device=H100, host_pid=pid, main_tid=pid)
    other = w.thread(pid + 3, "python3")
    w.step(plan.stray_step, t - 150.0, t - 150.0 + plan.stray_us, tid=other)
    w.frame("bench.py(20): <module>", t, t + plan.host_us)
    w.frame("torch/_dynamo/eval_frame.py(632): _fn", t + 10.0, t + 2_000.0)
    w.annotation("Torch-Compiled Region: 0/0", t + 20.0, t + 1_990.0)
    w.op("CompiledFunction", t + 1_900.0, t + 1_960.0)
    w.annotation("## Call CompiledFxGraph fx_abc123 ##", t + 1_905.0, t + 1_955.0)
    w.launch(TRITON_ONE, t + 1_920.0, plan.kernel_us, api="cuLaunchKernel")
    w.sync(t + 2_100.0)
    return w.write(path, "one_tiny_kernel")


def tiny_kernel_planted(plan: TinyKernelPlan = TINY_KERNEL) -> Planted:
    return Planted(
        p1="nothing",
        cause=None,
        call_site=TRITON_ONE,
        action=None,
        idle_by_cause_ms=ms({}),
        steady_iterations=(),
        notes=f"One {plan.kernel_us:g} µs kernel is the whole GPU window: nothing to rank, no "
        f"saving. ProfilerStep#{plan.stray_step} lasts {plan.stray_us / 1e6:g} s on a thread "
        "with no GPU work: not an iteration.",
    )
