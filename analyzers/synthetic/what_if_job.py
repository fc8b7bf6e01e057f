"""A job of ranks in lockstep, written twice (before and after a change) by the writer's own
queue model, so a joint replay of the ranks can be held against a job the generator timed.

Every rank runs the same steps: `kernels` GEMMs launched `op_us` apart (the host runs ahead
of the GPU), the gradients' all-reduce on a communication stream once the GEMMs are done
(the stream waits for the compute stream's event), the optimizer kernel once the all-reduce
is done (the compute stream waits for the communication stream's event), and a device
synchronise that ends the step. The all-reduce ends on every rank `transfer_us` after the
last rank arrived, so a rank whose GEMMs are slower (`slow_rank`, `slow_factor`) holds every
rank back. Ranks share one clock; `clock_skew_us` shifts rank r's recorded clock by
r × skew, as separate hosts do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .devices import H100
from .kernels import NCCL_ALL_REDUCE, NV_GEMM
from .what_if import COMM_STREAM, COMPUTE_STREAM, OPTIMIZER_KERNEL
from .writer import Writer

PID = 5151
T0_US = 2_000_000.0


@dataclass(frozen=True)
class LockstepPlan:
    ranks: int = 4
    steps: int = 6
    kernels: int = 20
    kernel_us: float = 200.0
    op_us: float = 30.0
    transfer_us: float = 500.0
    slow_rank: int | None = None
    slow_factor: float = 1.0  # the slow rank's GEMMs take this many times as long
    clock_skew_us: float = 0.0
    slow_by_step: tuple[float, ...] = ()  # the slow rank's factor in each step (else slow_factor)
    traced: tuple[int, ...] = ()  # the ranks whose trace is written (all when empty)
    message_nelems: int = 1 << 20  # the all-reduce's float elements


def write_lockstep_job(folder: Path, plan: LockstepPlan) -> list[Path]:
    """`rank<r>.json.gz` for every rank of `plan` (or only the `traced` ones: the others run,
    and hold the collectives, with no trace), into `folder`."""
    writers = [
        Writer(device=H100, host_pid=PID + r, main_tid=PID + r, sync_events=True)
        for r in range(plan.ranks)
    ]
    now = [T0_US] * plan.ranks
    for step in range(plan.steps):
        begun = list(now)
        arrive, call = [], []
        for r, w in enumerate(writers):
            slow = plan.slow_by_step[step] if plan.slow_by_step else plan.slow_factor
            factor = slow if r == plan.slow_rank else 1.0
            t = now[r]
            for _ in range(plan.kernels):
                got = w.launching_op("aten::mm", NV_GEMM, t, plan.kernel_us * factor)
                t = max(t + plan.op_us, got.call_end + w.timing.op_tail_us)
            w.op("nccl:all_reduce", t, t + 30.0, **_collective_args(plan, step))
            ready = w.record_event(t + 2.0, COMPUTE_STREAM)
            w.wait_event(t + 5.0, COMM_STREAM, ready)
            call.append(t + 8.0)
            arrive.append(w.start_of(COMM_STREAM, t + 8.0))
        done = max(arrive) + plan.transfer_us
        for r, w in enumerate(writers):
            w.launch(
                NCCL_ALL_REDUCE,
                call[r],
                done - arrive[r],
                stream=COMM_STREAM,
                gpu_args=_collective_args(plan, step),
            )
            t = call[r] + 23.0
            finished = w.record_event(t, COMM_STREAM)
            w.wait_event(t + 3.0, COMPUTE_STREAM, finished)
            w.launching_op("aten::_foreach_add_", OPTIMIZER_KERNEL, t + 6.0, 50.0)
            t = w.sync(t + 40.0) + 1.0
            w.step(step, begun[r], t)
            now[r] = t + 1.0
    paths = []
    for r, w in enumerate(writers):
        if plan.traced and r not in plan.traced:
            continue
        if plan.clock_skew_us:
            for event in w.events:
                event["ts"] = round(event["ts"] + r * plan.clock_skew_us, 3)
        info = {"backend": "nccl", "rank": r, "world_size": plan.ranks, "pg_count": 1}
        paths.append(w.write(Path(folder) / f"rank{r}.json.gz", "lockstep", distributedInfo=info))
    return paths


def _collective_args(plan: LockstepPlan, step: int) -> dict[str, Any]:
    """The c10d fields Kineto records on an all-reduce's operator and kernel."""
    return {
        "Collective name": "allreduce",
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": list(range(plan.ranks)),
        "Group size": plan.ranks,
        "dtype": "Float",
        "In msg nelems": plan.message_nelems,
        "Out msg nelems": plan.message_nelems,
        "Seq": step + 1,
    }
