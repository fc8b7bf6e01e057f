"""Training steps written twice, before and after a change, by the writer's own queue model
(writer.py), so a prediction can be held against a trace the generator timed itself.

Each step: a data-loader stall on the main thread (`loader_us`), then `kernels` operators
`op_us` apart, each launching one GEMM of `kernel_us`; with `sync` the step ends in a device
synchronise (the loss read back), so the GPU drains before the next step's loader; without
it the host runs ahead until `queue_limit` launches wait in the queue, and then each launch
call blocks until a slot frees. With `item`, the launches are followed by a loss `.item()`
(a blocking copy to pageable memory, so the host waits for the GPU) before `host_work_us` of
Python (logging); without it the same Python overlaps the GPU's work. With `upload_us` each
step starts by copying its batch to the GPU: from pageable memory the `.to()` returns only
once the copy has landed; `pinned` makes it a non-blocking copy from pinned memory. With
`allreduce_us` the gradients are all-reduced after the GEMMs on a communication stream (which
waits for the compute stream's event) and, unless `overlap`, the compute stream waits for the
all-reduce before the step's optimizer kernel; overlapped, it runs beside the next step's
GEMMs. `sync_events` writes the stream waits as CUPTI records them (the awaited record's
correlation id). A change is a second plan (`dataclasses.replace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .idle import LOADER_NAMES
from .kernels import H2D_PAGEABLE, H2D_PINNED, ITEM, NCCL_ALL_REDUCE, NV_GEMM, to_host
from .writer import Writer

PID = 4242
T0_US = 1_000_000.0
LOG_FRAME = "train.py(52): log_metrics"
BATCH_BYTES = 64 << 20
COMPUTE_STREAM, COMM_STREAM = 7, 21
OPTIMIZER_KERNEL = "multi_tensor_apply_kernel<AdamFunctor<float>>"


@dataclass(frozen=True)
class StepPlan:
    steps: int = 8
    loader_us: float = 0.0
    kernels: int = 40
    kernel_us: float = 200.0
    op_us: float = 30.0
    sync: bool = True
    queue_limit: int | None = None
    item: bool = False
    host_work_us: float = 0.0
    upload_us: float = 0.0  # the batch's copy to the GPU at each step's start
    pinned: bool = False  # from pinned memory, non-blocking (else pageable: the host waits)
    allreduce_us: float = 0.0  # the gradients' all-reduce after the GEMMs
    overlap: bool = False  # the optimizer does not wait for the all-reduce
    sync_events: bool = False


def write_step_trace(path: Path, plan: StepPlan) -> Path:
    w = Writer(
        device=H100,
        host_pid=PID,
        main_tid=PID,
        queue_limit=plan.queue_limit,
        sync_events=plan.sync_events,
    )
    tail = w.timing.op_tail_us
    t = T0_US
    for k in range(plan.steps):
        start = t
        if plan.loader_us:
            w.annotation(LOADER_NAMES[False], t, t + plan.loader_us)
            t += plan.loader_us
        if plan.upload_us:
            t = _upload(w, t, plan)
        for _ in range(plan.kernels):
            launched = w.launching_op("aten::mm", NV_GEMM, t, plan.kernel_us)
            t = max(t + plan.op_us, launched.call_end + tail)
        if plan.allreduce_us:
            t = _all_reduce(w, t, plan)
        if plan.item:
            t = to_host(w, t, 4, 2.0, names=ITEM) + 1.0
        if plan.host_work_us:
            w.frame(LOG_FRAME, t, t + plan.host_work_us)
            t += plan.host_work_us + 1.0
        if plan.sync:
            t = w.sync(t) + 1.0
        w.step(k, start, t)
        t += 1.0
    return w.write(path, "what_if_steps")


def _all_reduce(w: Writer, t: float, plan: StepPlan) -> float:
    """The gradients' all-reduce on the communication stream, then the optimizer kernel on
    the compute stream (after the all-reduce unless overlapped); returns the host's time."""
    w.op("nccl:all_reduce", t, t + 30.0)
    ready = w.record_event(t + 2.0, COMPUTE_STREAM)
    w.wait_event(t + 5.0, COMM_STREAM, ready)
    w.launch(NCCL_ALL_REDUCE, t + 8.0, plan.allreduce_us, stream=COMM_STREAM)
    t += 31.0
    if not plan.overlap:
        done = w.record_event(t, COMM_STREAM)
        w.wait_event(t + 3.0, COMPUTE_STREAM, done)
        t += 6.0
    launched = w.launching_op("aten::_foreach_add_", OPTIMIZER_KERNEL, t, 50.0)
    return max(t + plan.op_us, launched.call_end + w.timing.op_tail_us)


def _upload(w: Writer, t: float, plan: StepPlan) -> float:
    """`batch.to("cuda")`: the copy of `upload_us`; returns when the host goes on."""
    if not plan.pinned:
        return to_host(w, t, BATCH_BYTES, plan.upload_us, kind=H2D_PAGEABLE) + 1.0
    w.op("aten::to", t, t + 20.0)
    got = w.copy(H2D_PINNED, t + 4.0, BATCH_BYTES, plan.upload_us)
    return max(t + 20.0, got.call_end + 2.0) + 1.0
