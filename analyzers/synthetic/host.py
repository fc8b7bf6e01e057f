"""Kineto traces of host-side situations with known answers, for tests and demos.

Three training loops on one GPU, each written with or without `ProfilerStep#N` marks:

* `write_host_bound_trace`: the data loader holds the host for most of every step, so the GPU
  idles between iterations (about 80 % of the window);
* `write_blocking_item_trace`: two `.item()` calls per step (aten::item ->
  aten::_local_scalar_dense -> cudaMemcpyAsync + cudaStreamSynchronize) drain the GPU queue;
* `write_launch_bound_trace`: thousands of 4 µs kernels, each launched into an empty queue.

Timing is exact (no jitter): every figure a test asserts can be worked out by hand from the
plan constants below. The layout of each step is described next to its constants.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .sample import write_document

HOST_PID, MAIN_TID, GPU_PID, STREAM = 3100, 3100, 0, 7
BASE_US = 8_000_000_000.0
OP_LAUNCH_AT_US = 8.0  # a launching op calls the runtime 8 µs after it starts
LAUNCH_CALL_US = 6.0
LAUNCH_LATENCY_US = 10.0  # an empty queue starts a kernel 10 µs after its launch call
GEMM = "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
DEVICE = {
    "id": 0,
    "name": "NVIDIA H100 80GB HBM3",
    "totalGlobalMem": 85029158912,
    "computeMajor": 9,
    "computeMinor": 0,
    "numSms": 132,
    "warpSize": 32,
}
FOREACH = "void at::native::multi_tensor_apply_kernel<at::native::ForeachAdd<float>>"
DATA_LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


@dataclass(frozen=True)
class HostBoundPlan:
    """Step k starts at k * period: the data loader runs for `load_us` (collate, aten::stack,
    ends it), then 40 operators are launched 25 µs apart (a pinned H2D copy of `copy_us`,
    20 linear, 16 backward mm, 3 optimizer foreach adds), each kernel `kernel_us` long. The
    GPU runs each step's work back to back. After the loop the host waits `tail_us` and
    launches one more kernel (evaluation), outside every step."""

    steps: int = 5
    period_us: float = 10_000.0
    load_us: float = 9_000.0
    op_us: float = 25.0
    copy_us: float = 30.0
    kernel_us: float = 45.0
    forward: int = 20
    backward: int = 16
    optimizer: int = 3
    tail_us: float = 2_000.0

    @property
    def gpu_us(self) -> float:
        """GPU busy time of one step (the copy, then every kernel back to back)."""
        return self.copy_us + (self.forward + self.backward + self.optimizer) * self.kernel_us


@dataclass(frozen=True)
class BlockingPlan:
    """Step k starts at k * period. Three bursts of 30 GEMMs (`kernel_us` each, launched
    `op_us` apart, so the queue runs ahead of the GPU). After burst A, `.item()` in the
    Router module waits for the whole queue; the host then spends `after_first_us` before
    burst B. After burst B the host logs for `log_us`, calls `.item()` again in
    train.py's log_metrics (the queue is almost drained) and spends `after_second_us`
    before burst C. The 4-byte D2H copy of each `.item()` takes `scalar_copy_us`."""

    steps: int = 3
    period_us: float = 11_000.0
    kernels: int = 30
    kernel_us: float = 100.0
    op_us: float = 20.0
    scalar_copy_us: float = 3.0
    after_first_us: float = 400.0
    log_us: float = 2_200.0
    after_second_us: float = 1_000.0


@dataclass(frozen=True)
class LaunchBoundPlan:
    """Step k starts at k * period: `kernels` aten::add operators `op_us` apart, each
    launching a `kernel_us` kernel into an empty queue, then one optimizer foreach add; the
    host spends the rest of the period before the next step."""

    steps: int = 2
    period_us: float = 31_000.0
    kernels: int = 1_500
    op_us: float = 20.0
    kernel_us: float = 4.0


HOST_BOUND = HostBoundPlan()
BLOCKING = BlockingPlan()
LAUNCH_BOUND = LaunchBoundPlan()


Shapes = tuple[list[list[int]], list[str]]  # an op's Input Dims and Input type


class _Writer:
    """Host spans, launches with their flows, and kernels on one stream, at given times."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.gpu = BASE_US  # end of the last GPU event on the stream
        self.correlation = 1000
        self.external = 10

    def x(self, cat: str, name: str, ts: float, dur: float, pid: int, tid: int, **args: Any):
        event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid}
        event.update(ts=round(ts, 3), dur=round(dur, 3))
        if args:
            event["args"] = args
        self.events.append(event)

    def frame(self, name: str, start: float, end: float) -> None:
        """A Python frame (or `nn.Module:` frame) around [start, end] on the main thread."""
        self.x("python_function", name, start, end - start, HOST_PID, MAIN_TID)

    def op(self, name: str, ts: float, dur: float, shapes: Shapes | None = None) -> None:
        """A cpu_op; `shapes` (Input Dims, Input type) default to one shapeless float."""
        self.external += 1
        dims, types = shapes or ([[]], ["float"])
        args = {"External id": self.external, "Input Dims": dims, "Input type": types}
        self.x("cpu_op", name, ts, dur, HOST_PID, MAIN_TID, **args)

    def launch(
        self,
        kernel: str,
        ts: float,
        dur: float,
        api: str = "cudaLaunchKernel",
        *,
        call_us: float = LAUNCH_CALL_US,
        extra: dict[str, Any] | None = None,
    ) -> float:
        """Runtime call at `ts` lasting `call_us`, its flow pair and the GPU event (with the
        `extra` args, e.g. a copy's bytes); returns the event's end."""
        self.correlation += 1
        ids = {"External id": self.external, "correlation": self.correlation}
        self.x("cuda_runtime", api, ts, call_us, HOST_PID, MAIN_TID, **ids, cbid=211)
        start = max(self.gpu, ts + LAUNCH_LATENCY_US)
        copy = kernel.startswith("Memcpy")
        shape = {} if copy else {"grid": [64, 1, 1], "block": [256, 1, 1]}
        args = {**ids, "device": 0, "stream": STREAM, **shape, **(extra or {})}
        self.x("gpu_memcpy" if copy else "kernel", kernel, start, dur, GPU_PID, STREAM, **args)
        flow = {"id": self.correlation, "cat": "ac2g", "name": "ac2g"}
        self.events.append({"ph": "s", **flow, "pid": HOST_PID, "tid": MAIN_TID, "ts": ts})
        self.events.append(
            {"ph": "f", **flow, "pid": GPU_PID, "tid": STREAM, "ts": round(start, 3), "bp": "e"}
        )
        self.gpu = start + dur
        return self.gpu

    def launching_op(
        self,
        name: str,
        kernel: str,
        ts: float,
        op_us: float,
        dur: float,
        api: str = "",
        shapes: Shapes | None = None,
    ) -> None:
        """An operator of `op_us - 3` µs (at least 15: its launch call ends 14 µs in) that
        launches one GPU event of `dur`."""
        self.op(name, ts, op_us - 3.0, shapes)
        self.launch(kernel, ts + OP_LAUNCH_AT_US, dur, api or "cudaLaunchKernel")

    def step(self, k: int, start: float, end: float, marked: bool) -> None:
        if marked:
            name = f"ProfilerStep#{10 + k}"
            self.x("user_annotation", name, start, end - start, HOST_PID, MAIN_TID)


def _host_bound_step(w: _Writer, p: HostBoundPlan, t: float) -> None:
    w.x("user_annotation", DATA_LOADER, t, p.load_us - 50.0, HOST_PID, MAIN_TID)
    w.op("aten::stack", t + p.load_us - 100.0, 50.0)
    launch_start = t + p.load_us
    w.frame("train.py(40): train_step", launch_start - 1.0, t + p.period_us - 1.0)
    copy = "Memcpy HtoD (Pinned -> Device)"
    w.launching_op("aten::to", copy, launch_start, p.op_us, p.copy_us, "cudaMemcpyAsync")
    at = launch_start + p.op_us
    w.frame("nn.Module: Net_0", at - 0.5, at + p.forward * p.op_us - 0.5)
    for i in range(p.forward):
        w.launching_op("aten::linear", GEMM, at + i * p.op_us, p.op_us, p.kernel_us)
    at += p.forward * p.op_us
    for i in range(p.backward):
        name = "autograd::engine::evaluate_function: MmBackward0"
        w.launching_op(name, GEMM, at + i * p.op_us, p.op_us, p.kernel_us)
    at += p.backward * p.op_us
    opt_us = p.optimizer * p.op_us
    w.x("user_annotation", "Optimizer.step#SGD.step", at, opt_us, HOST_PID, MAIN_TID)
    for i in range(p.optimizer):
        w.launching_op("aten::_foreach_add_", FOREACH, at + i * p.op_us, p.op_us, p.kernel_us)


def write_host_bound_trace(
    path: Path, *, profiler_steps: bool = True, plan: HostBoundPlan = HOST_BOUND
) -> Path:
    """Host-bound training (HOST_BOUND unless another `plan` is given): the GPU idles between
    iterations."""
    p, w = plan, _Writer()
    for k in range(p.steps):
        t = BASE_US + k * p.period_us
        w.step(k, t, t + p.period_us, profiler_steps)
        _host_bound_step(w, p, t)
    tail = BASE_US + p.steps * p.period_us + p.tail_us
    w.launching_op("aten::fill_", ADD, tail, p.op_us, p.kernel_us)
    return _write(path, w)


def _scalar_item(w: _Writer, t: float, copy_us: float) -> float:
    """`.item()` at host time `t`: a D2H copy queued behind everything launched so far, then
    a stream synchronise until it lands. Returns the time aten::item returns."""
    copy_call = t + 4.0
    w.op("aten::item", t, 0.0)
    item = w.events[-1]
    w.op("aten::_local_scalar_dense", t + 2.0, 0.0)
    scalar = w.events[-1]
    copy_end = w.launch("Memcpy DtoH (Device -> Pageable)", copy_call, copy_us, "cudaMemcpyAsync")
    sync_start, sync_end = copy_call + 8.0, copy_end + 5.0
    sync_us = sync_end - sync_start
    w.x("cuda_runtime", "cudaStreamSynchronize", sync_start, sync_us, HOST_PID, MAIN_TID)
    scalar["dur"] = round(sync_end + 2.0 - (t + 2.0), 3)
    item["dur"] = round(sync_end + 4.0 - t, 3)
    return sync_end + 4.0


def _burst(w: _Writer, p: BlockingPlan, t: float) -> float:
    """`kernels` aten::mm launched `op_us` apart from `t`; returns when the last op is done."""
    for i in range(p.kernels):
        w.launching_op("aten::mm", GEMM, t + i * p.op_us, p.op_us, p.kernel_us)
    return t + p.kernels * p.op_us


def _blocking_step(w: _Writer, p: BlockingPlan, t: float) -> None:
    host = _burst(w, p, t)
    done = _scalar_item(w, host, p.scalar_copy_us)
    w.frame("nn.Module: Router_0", host - 1.0, done + 1.0)
    w.frame("model.py(88): forward", host - 0.5, done + 0.5)
    host = _burst(w, p, done + p.after_first_us) + p.log_us
    done = _scalar_item(w, host, p.scalar_copy_us)
    w.frame("train.py(61): log_metrics", host - 0.5, done + 0.5)
    _burst(w, p, done + p.after_second_us)
    w.frame("train.py(55): train_step", t - 1.0, t + p.period_us - 1.0)


def write_blocking_item_trace(path: Path, *, profiler_steps: bool = True) -> Path:
    """Training with blocking `.item()` calls (BLOCKING)."""
    p, w = BLOCKING, _Writer()
    for k in range(p.steps):
        t = BASE_US + k * p.period_us
        w.step(k, t, t + p.period_us, profiler_steps)
        _blocking_step(w, p, t)
    return _write(path, w)


def write_launch_bound_trace(path: Path, *, profiler_steps: bool = True) -> Path:
    """Thousands of tiny kernels, each launched into an empty queue (LAUNCH_BOUND)."""
    p, w = LAUNCH_BOUND, _Writer()
    for k in range(p.steps):
        t = BASE_US + k * p.period_us
        w.step(k, t, t + p.period_us, profiler_steps)
        for i in range(p.kernels):
            w.launching_op("aten::add", ADD, t + i * p.op_us, p.op_us, p.kernel_us)
        at = t + p.kernels * p.op_us
        w.launching_op("aten::_foreach_add_", FOREACH, at, p.op_us, p.kernel_us)
    return _write(path, w)


def _metadata() -> list[dict[str, Any]]:
    def meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
        return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "ts": BASE_US, "args": args}

    return [
        meta("process_name", HOST_PID, 0, name="python"),
        meta("thread_name", HOST_PID, MAIN_TID, name=f"thread {MAIN_TID} (python)"),
        meta("process_name", GPU_PID, 0, name="GPU 0"),
        meta("thread_name", GPU_PID, STREAM, name=f"stream {STREAM}"),
    ]


def _write(path: Path, w: _Writer) -> Path:
    """The trace as Kineto writes it (gzip when the name ends in .gz, fixed mtime)."""
    document = {
        "schemaVersion": 1,
        "deviceProperties": [DEVICE],
        "record_shapes": 1,
        "with_stack": 1,
        "with_modules": 1,
        "cuda_runtime_version": 12040,
        "traceEvents": _metadata() + w.events,
        "traceName": "rooflens_host_side_sample",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
    }
    return write_document(Path(path), document)
