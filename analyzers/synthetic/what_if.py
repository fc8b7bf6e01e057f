"""Training steps written twice, before and after a change, by the writer's own queue model
(writer.py), so a prediction can be held against a trace the generator timed itself.

Each step: a data-loader stall on the main thread (`loader_us`), then `kernels` operators
`op_us` apart, each launching one GEMM of `kernel_us`; with `sync` the step ends in a device
synchronise (the loss read back), so the GPU drains before the next step's loader; without
it the host runs ahead until `queue_limit` launches wait in the queue, and then each launch
call blocks until a slot frees. With `item`, the launches are followed by a loss `.item()`
(a blocking copy to pageable memory, so the host waits for the GPU) before `host_work_us` of
Python (logging); without it the same Python overlaps the GPU's work. A change is a second
plan (`dataclasses.replace`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .idle import LOADER_NAMES
from .kernels import ITEM, NV_GEMM, to_host
from .writer import Writer

PID = 4242
T0_US = 1_000_000.0
LOG_FRAME = "train.py(52): log_metrics"


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


def write_step_trace(path: Path, plan: StepPlan) -> Path:
    w = Writer(device=H100, host_pid=PID, main_tid=PID, queue_limit=plan.queue_limit)
    tail = w.timing.op_tail_us
    t = T0_US
    for k in range(plan.steps):
        start = t
        if plan.loader_us:
            w.annotation(LOADER_NAMES[False], t, t + plan.loader_us)
            t += plan.loader_us
        for _ in range(plan.kernels):
            launched = w.launching_op("aten::mm", NV_GEMM, t, plan.kernel_us)
            t = max(t + plan.op_us, launched.call_end + tail)
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
