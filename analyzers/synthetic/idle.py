"""Training loops whose GPU idles while the host is busy with one nameable thing.

* `write_allocator_churn_trace`: the backward frees and re-takes memory (`hipFree`/`hipMalloc`
  on MI300X, `cudaFree`/`cudaMalloc` on H100) at every convolution's gradient; each free
  waits for the GPU to drain, and from the third iteration each free is ten times slower;
* `write_single_loader_trace`: a `num_workers=0` DataLoader fetches every batch on the main
  thread (48-62 ms, drawn from the seed) while the GPU waits;
* `write_loader_stall_trace`: a multi-worker loader keeps up but stalls 0.5-0.8 s every third
  or fourth iteration;

Timing is exact; each plan's docstring works the planted answer out (planted.py
defines the terms). The seed draws the stated ranges and moves the clock and pid.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100, MI300X, Vendor
from .kernels import (
    AMD_CONV,
    AMD_CONV_BWD,
    AMD_GEMM,
    FOREACH_ADD,
    H2D_PINNED,
    ITEM,
    NV_CONV,
    NV_CONV_DGRAD,
    NV_GEMM,
    RELU_BF16,
    THRESHOLD_BWD,
    loader_frames,
    paced,
    seeded,
    to_host,
)
from .planted import ACTIONS, Planted, ms
from .writer import Writer

BATCH_BYTES = 8_388_608  # the batch copied to the device each step
START_US = 18.0  # an idle GPU starts an operator's kernel 8 + 10 µs after the operator
BACKWARD_FRAMES = (
    "torch/_tensor.py(626): backward",
    "torch/autograd/__init__.py(347): backward",
    "torch/autograd/graph.py(825): _engine_run_backward",
)


def total_ms(per_iteration: list[dict[str, float]]) -> dict[str, float]:
    """{cause: ms} summed over iterations given in µs."""
    out: dict[str, float] = {}
    for idle in per_iteration:
        for cause, us in idle.items():
            out[cause] = out.get(cause, 0.0) + us / 1e3
    return out


@dataclass(frozen=True)
class AllocatorChurnPlan:
    """Iteration k starts at t_k. The main thread launches `forward` operators `op_us` apart
    (a convolution and a ReLU in turn, `kernel_us` each), then runs the backward, whose
    operators run on the autograd thread: `frees` `ConvolutionBackward0`s, each calling the
    free (which waits for the GPU to drain and then takes `free_us[k]`), a malloc of
    `malloc_us` (the first `mallocs` of them) and, 4 µs later, the launch of its gradient
    kernel (`kernel_us`, starting 10 µs after the call: the GPU is idle); then `plain`
    `ReluBackward0`s and `optimizer` foreach adds (`optimizer_us`), all queued.

    Every free's gap is free_us[k] + malloc (allocator) + 14 µs from the malloc's end to the
    kernel's start (the operator and its launch: dispatch). The GPU is busy from the last
    churn kernel's start through the plain and optimizer kernels and the next forward (all
    queued), so nothing else idles (the GPU window starts at the first kernel). An
    iteration after the first lasts `tail_us` + frees x (free_us[k] + 14) + mallocs x
    malloc_us + (frees - 1) x kernel_us: 116.6 ms, then 1,023.8, 1,074.2 and 1,077.8 ms as
    the frees slow down (the first is shorter: its forward starts on an idle GPU).
    Allocator idle: 18 x 185 ms of frees + 5 x 3.2 ms of mallocs = 3,346 ms of 3,347.26
    (99.96 %); dispatch 5 x 18 x 14 µs = 1.26 ms."""

    free_us: tuple[float, ...] = (5_600.0, 5_600.0, 56_000.0, 58_800.0, 59_000.0)
    frees: int = 18
    mallocs: int = 16
    malloc_us: float = 200.0
    forward: int = 20
    plain: int = 10
    optimizer: int = 3
    kernel_us: float = 250.0
    optimizer_us: float = 125.0
    op_us: float = 25.0
    first_step: int = 3

    @property
    def tail_us(self) -> float:
        """GPU time from the last churn kernel's start to the next iteration's first free."""
        return (1 + self.plain + self.forward) * self.kernel_us + self.optimizer * (
            self.optimizer_us
        )

    def step_us(self, k: int) -> float:
        churn = self.frees * (self.free_us[k] + 14.0) + self.mallocs * self.malloc_us
        churn += (self.frees - 1) * self.kernel_us
        if k == 0:  # forward on an idle GPU, then from the last churn kernel to the step's end
            return START_US + self.forward * self.kernel_us + churn + self.end_lag_us
        return self.tail_us + churn

    @property
    def end_lag_us(self) -> float:
        """From the last churn kernel's start to the iteration's end (host)."""
        return self.plain * self.op_us + 1.0 + self.optimizer * self.op_us + 4.0

    def idle_us(self, k: int) -> dict[str, float]:
        return {
            "allocator": self.frees * self.free_us[k] + self.mallocs * self.malloc_us,
            "dispatch": self.frees * 14.0,
        }


ALLOCATOR_CHURN = AllocatorChurnPlan()


def _churn_op(w: Writer, p: AllocatorChurnPlan, s: float, j: int, k: int, bwd: int) -> float:
    """One ConvolutionBackward0 from `s`; returns when its kernel starts (the next op's start)."""
    names = (
        "autograd::engine::evaluate_function: ConvolutionBackward0",
        "ConvolutionBackward0",
        "aten::convolution_backward",
    )
    ops = []
    for depth, name in enumerate(names):
        w.op(name, s + depth, s + depth, bwd)
        ops.append(w.events[-1])
    end = max(s + 8.0, w.drained()) + p.free_us[k]
    w.runtime(w.api("free"), s + 8.0, end - s - 8.0, bwd)
    if j < p.mallocs:
        end = w.runtime(w.api("malloc"), end, p.malloc_us, bwd)
    kernel = AMD_CONV_BWD if w.vendor == "amd" else NV_CONV_DGRAD
    got = w.launch(kernel, end + 4.0, p.kernel_us, tid=bwd)
    for depth, event in enumerate(ops):
        event["dur"] = round(round(got.call_end + 3.0 - depth, 3) - event["ts"], 3)
    return got.start


def _churn_step(w: Writer, p: AllocatorChurnPlan, t: float, k: int, bwd: int) -> float:
    conv = AMD_CONV if w.vendor == "amd" else NV_CONV
    forward = [
        ("aten::convolution", conv, p.kernel_us)
        if i % 2 == 0
        else ("aten::relu_", RELU_BF16, p.kernel_us)
        for i in range(p.forward)
    ]
    host, _ = paced(w, t, forward, p.op_us)
    w.frame("nn.Module: ResNet_0", t, host)
    s = host + 2.0
    for j in range(p.frees):
        s = _churn_op(w, p, s, j, k, bwd)
    plain = [("autograd::engine::evaluate_function: ReluBackward0", THRESHOLD_BWD, p.kernel_us)]
    done, _ = paced(w, s, plain * p.plain, p.op_us, tid=bwd)
    for depth, name in enumerate(BACKWARD_FRAMES):
        w.frame(name, host + depth * 0.2, done + 1.0 - depth * 0.2)
    opt = done + 1.0
    w.annotation("Optimizer.step#SGD.step", opt, opt + p.optimizer * p.op_us + 2.0)
    w.frame("torch/optim/optimizer.py(487): wrapper", opt, opt + p.optimizer * p.op_us + 3.0)
    foreach = [("aten::_foreach_add_", FOREACH_ADD, p.optimizer_us)] * p.optimizer
    end, _ = paced(w, opt, foreach, p.op_us)
    return end + 4.0


def write_allocator_churn_trace(
    path: Path, *, seed: int = 0, vendor: Vendor = "amd", plan: AllocatorChurnPlan = ALLOCATOR_CHURN
) -> Path:
    """Allocator churn growing with iterations (ALLOCATOR_CHURN), on MI300X (`vendor="amd"`,
    hip* calls) or H100 (`"nvidia"`, cuda* calls)."""
    return allocator_churn_writer(seed, vendor, plan).write(path, f"allocator_churn_{vendor}")


def allocator_churn_writer(seed: int, vendor: Vendor, plan: AllocatorChurnPlan) -> Writer:
    """The events of `write_allocator_churn_trace`, not yet written."""
    _, pid, t = seeded(seed)
    w = Writer(
        device=MI300X if vendor == "amd" else H100, host_pid=pid, main_tid=pid, vendor=vendor
    )
    bwd = w.thread(pid + 17, "pt_autograd_0")
    first = t
    for k in range(len(plan.free_us)):
        end = _churn_step(w, plan, t, k, bwd)
        w.step(plan.first_step + k, t, end)
        w.frame("train.py(58): train_step", t, end)
        t = end
    w.frame("train.py(91): <module>", first - 5.0, t + 3_000.0)
    return w


def allocator_churn_planted(vendor: Vendor = "amd", plan: AllocatorChurnPlan = ALLOCATOR_CHURN):
    steps = range(len(plan.free_us))
    idle = total_ms([plan.idle_us(k) for k in steps])
    free = "hipFree" if vendor == "amd" else "cudaFree"
    return Planted(
        p1="idle",
        cause="allocator",
        call_site=free,
        caller="autograd::engine::evaluate_function: ConvolutionBackward0",
        action=ACTIONS["allocator"],
        idle_by_cause_ms=ms(idle),
        steady_iterations=tuple(steps),
        step_ms=tuple(round(plan.step_us(k) / 1e3, 6) for k in steps),
        estimate_ms=(round(idle["allocator"], 6),) * 2,
        notes=f"{plan.frees} frees and {plan.mallocs} mallocs per backward, each free "
        "waiting for the GPU to drain; from the third iteration each free is 10x slower, so "
        "the iterations grow from 116.6 to 1,077.8 ms: a slowdown, not a median.",
    )


@dataclass(frozen=True)
class TrainingPlan:
    """One step's GPU work, launched by operators `op_us` apart: a pinned H2D copy of the
    batch (`copy_us`), `gemms` linears (`gemm_us`) each followed by `per_gemm` elementwise
    kernels (`small_us`), half in the forward (main thread), half in the backward (autograd
    thread), then `optimizer` foreach adds. Every event is at least `op_us` long, so the
    GPU runs the step back to back from its first event, ending `lag_us` after the host
    launched the last operator."""

    copy_us: float
    gemms: int
    gemm_us: float
    per_gemm: int = 1
    small_us: float = 25.0
    optimizer: int = 4
    optimizer_us: float = 25.0
    op_us: float = 25.0

    @property
    def ops(self) -> int:
        return 1 + self.gemms * (1 + self.per_gemm) + self.optimizer

    @property
    def host_us(self) -> float:
        return self.ops * self.op_us

    @property
    def lag_us(self) -> float:
        gpu = self.copy_us + self.gemms * (self.gemm_us + self.per_gemm * self.small_us)
        return START_US + gpu + self.optimizer * self.optimizer_us - self.host_us


def launch_training(w: Writer, p: TrainingPlan, t: float, bwd: int, vendor: Vendor) -> float:
    """The step's launches from `t` (TrainingPlan); returns `t + p.host_us`."""
    gemm = AMD_GEMM if vendor == "amd" else NV_GEMM
    w.launching_op("aten::to", H2D_PINNED, t, p.copy_us, nbytes=BATCH_BYTES)
    half = p.gemms // 2
    fwd = [("aten::linear", gemm, p.gemm_us)] + [("aten::relu", RELU_BF16, p.small_us)] * p.per_gemm
    host, _ = paced(w, t + p.op_us, fwd * half, p.op_us)
    w.frame("nn.Module: MLP_0", t + p.op_us - 1.0, host)
    bwd_ops = [("autograd::engine::evaluate_function: AddmmBackward0", gemm, p.gemm_us)]
    bwd_ops += [
        ("autograd::engine::evaluate_function: ReluBackward0", THRESHOLD_BWD, p.small_us)
    ] * p.per_gemm
    back, _ = paced(w, host, bwd_ops * (p.gemms - half), p.op_us, tid=bwd)
    for depth, name in enumerate(BACKWARD_FRAMES):
        w.frame(name, host + depth * 0.2, back - depth * 0.2)
    if p.optimizer:
        w.annotation("Optimizer.step#AdamW.step", back, back + p.optimizer * p.op_us - 1.0)
        foreach = [("aten::_foreach_add_", FOREACH_ADD, p.optimizer_us)] * p.optimizer
        paced(w, back, foreach, p.op_us)
    return t + p.host_us


@dataclass(frozen=True)
class LoaderPlan:
    """Iteration k starts at t_k with the DataLoader's `__next__` (`loader_us(seed)[k]`),
    then the step's launches (`train`, TrainingPlan) from t_k + loader; the next iteration
    starts when the last has returned.

    Without `item` (single-process loader): the GPU runs the step from t_k + loader + 18 µs
    to `train.lag_us` after the next iteration starts, then idles until that iteration's
    loader returns and its copy starts 18 µs later: input_pipeline = loader - lag_us and
    18 µs of dispatch (none in the first iteration: its loader runs before the GPU window).

    With `item` (multi-worker loader): the step ends with `loss.item()`, whose 4-byte copy
    lands when the step's work is done; aten::item returns 9 µs later (sync) and the next
    loader starts. Per iteration: input_pipeline = loader, dispatch 18 µs, sync 9 µs (the
    first loader and the last sync lie outside the GPU window, so they do not count). The
    loader takes `short_us` but stalls for `loader_range_us` from the third or fourth
    iteration on, then every third or fourth."""

    train: TrainingPlan
    steps: int = 6
    loader_range_us: tuple[float, float] = (48_000.0, 62_000.0)
    workers: bool = False
    short_us: float = 300.0
    first_step: int = 1

    def stalls(self, seed: int) -> list[int]:
        """Iterations whose multi-worker loader stalls."""
        rng, out = seeded(seed)[0], []
        k = rng.choice((2, 3))
        while self.workers and k < self.steps:
            out.append(k)
            k += rng.choice((3, 4))
        return out

    def loader_us(self, seed: int) -> list[float]:
        rng = seeded(seed + 7_919)[0]
        low, high = self.loader_range_us
        if not self.workers:
            return [float(round(rng.uniform(low, high))) for _ in range(self.steps)]
        loads = [self.short_us] * self.steps
        for k in self.stalls(seed):
            loads[k] = float(round(rng.uniform(low, high)))
        return loads

    def idle_us(self, seed: int) -> list[dict[str, float]]:
        loads, out = self.loader_us(seed), []
        for k, load in enumerate(loads):
            if k == 0:  # before the GPU's first event: outside the GPU window
                load = float("-inf")
            if self.workers:
                item = 2.0 * len(ITEM) + 5.0 if k < len(loads) - 1 else 0.0
                out.append(
                    {
                        "input_pipeline": max(load, 0.0),
                        "sync": item,
                        "dispatch": START_US if k else 0.0,
                    }
                )
                continue
            lag = self.train.lag_us  # when the GPU drains, from t_k
            out.append(
                {
                    "input_pipeline": max(load - lag, 0.0),
                    "dispatch": min(max(load + START_US - lag, 0.0), START_US),
                }
            )
        return out

    def step_us(self, seed: int) -> list[float]:
        """Iteration lengths: loader and launches, and with `.item()` the wait for the GPU."""
        gpu = self.train.host_us + self.train.lag_us - START_US  # the step's GPU work
        wait = START_US + gpu + 2.0 + 5.0 + 2.0 * len(ITEM) if self.workers else 0.0
        return [load + (wait or self.train.host_us) for load in self.loader_us(seed)]


# 30 GEMMs of 150 µs and 34 small kernels after a 320 µs copy: 5,670 µs of GPU work
# launched in 1,625 µs, so the GPU drains 4,063 µs into the next loader.
SINGLE_LOADER = LoaderPlan(TrainingPlan(copy_us=320.0, gemms=30, gemm_us=150.0))
# 6 GEMMs of 20 ms, 6 small kernels of 2 ms, 2 optimizer kernels of 1 ms and a 335 µs copy:
# 134.335 ms of GPU work a step; stalls of 0.5-0.8 s.
LOADER_STALLS = LoaderPlan(
    TrainingPlan(
        copy_us=335.0,
        gemms=6,
        gemm_us=20_000.0,
        small_us=2_000.0,
        optimizer=2,
        optimizer_us=1_000.0,
    ),
    steps=12,
    loader_range_us=(500_000.0, 800_000.0),
    workers=True,
)
LOADER_NAMES = {
    False: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    True: "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__",
}


def _loader_trace(path: Path, plan: LoaderPlan, seed: int, vendor: Vendor, name: str) -> Path:
    _, pid, t = seeded(seed)
    w = Writer(
        device=MI300X if vendor == "amd" else H100, host_pid=pid, main_tid=pid, vendor=vendor
    )
    bwd, first = w.thread(pid + 17, "pt_autograd_0"), t
    for k, load in enumerate(plan.loader_us(seed)):
        w.annotation(LOADER_NAMES[plan.workers], t, t + load)
        loader_frames(w, t + 0.5, t + load - 0.5, workers=plan.workers)
        end = launch_training(w, plan.train, t + load, bwd, vendor)
        if plan.workers:  # loss.item() for the log
            at, end = end, to_host(w, end, 4, 2.0, names=ITEM)
            w.frame("train.py(47): log_loss", at, end)
        w.step(plan.first_step + k, t, end)
        w.frame("train.py(44): train_step", t + load, end)
        t = end
    w.frame("train.py(80): train", first - 2.0, t + 2.0)
    return w.write(path, name)


def write_single_loader_trace(
    path: Path, *, seed: int = 0, vendor: Vendor = "nvidia", plan: LoaderPlan = SINGLE_LOADER
) -> Path:
    """A num_workers=0 DataLoader between every two steps (SINGLE_LOADER)."""
    return _loader_trace(path, plan, seed, vendor, "single_process_loader")


def write_loader_stall_trace(
    path: Path, *, seed: int = 0, vendor: Vendor = "nvidia", plan: LoaderPlan = LOADER_STALLS
) -> Path:
    """A multi-worker DataLoader stalling every third or fourth iteration (LOADER_STALLS)."""
    return _loader_trace(path, plan, seed, vendor, "multi_worker_loader_stalls")


def loader_planted(plan: LoaderPlan, seed: int = 0) -> Planted:
    total = total_ms(plan.idle_us(seed))
    loads = plan.loader_us(seed)
    steps = [s / 1e3 for s in plan.step_us(seed)]
    which = f"stalls at iterations {plan.stalls(seed)}" if plan.workers else "every iteration"
    return Planted(
        p1="idle",
        cause="input_pipeline",
        call_site=LOADER_NAMES[plan.workers],
        action=ACTIONS["input_pipeline"],
        idle_by_cause_ms=ms(total),
        steady_iterations=tuple(range(plan.steps)),
        step_ms=tuple(round(s, 6) for s in steps),
        estimate_ms=(round(total["input_pipeline"], 6),) * 2,
        notes=f"The GPU waits for the next batch ({which}); the loader takes "
        f"{min(loads) / 1e3:g}-{max(loads) / 1e3:g} ms.",
    )
