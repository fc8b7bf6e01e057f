"""A synthetic distributed job: one Kineto trace per rank, with NCCL collectives whose process
group, sequence number and sizes are recorded as Kineto writes them, and planted imbalance.

Every rank runs the same steps: data loading on the host (the GPU idles), then, for each
collective, a compute kernel and the collective. A collective starts on each rank when that
rank's compute is done and ends on every rank `transfer_us` after the last rank arrived, so
the time a rank waits is exactly what was planted (plus a little seeded jitter). Parameters:
docs/multirank.md#the-synthetic-job-generator. Deterministic for a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflens.analyzers.trace.synthetic import write_document
from rooflens.analyzers.trace.synthetic_host import (
    DATA_LOADER,
    DEVICE,
    GEMM,
    HOST_PID,
    MAIN_TID,
    _Writer,
)

BASE_US = 9_000_000_000.0
COMPUTE_STREAM, COMM_STREAM = 7, 21
GPU_PID = 0
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
OP_LEAD_US = 15.0  # a launching op starts this long before its kernel
LAUNCH_LEAD_US = 10.0  # and its launch call this long before
MM_INPUTS = ([[2048, 4096], [4096, 4096]], "c10::BFloat16")  # ~23 % of an H100's bf16 peak


def _shapes(dims: list, dtype: str) -> dict[str, Any]:
    """An operator's recorded inputs: shapes, dtypes and (tensors only) empty scalars."""
    n = len(dims)
    return {"Input Dims": dims, "Input type": [dtype] * n, "Concrete Inputs": [""] * n}


@dataclass(frozen=True)
class JobPlan:
    """What the generated job does; times in µs.

    `slow_rank` computes `slow_us` longer before every collective (the planted straggler);
    `load_skew_us` and `compute_skew_us` make data loading and compute uneven, rank r taking
    `skew * r / (ranks - 1)` longer than rank 0 (loading once per step, compute before every
    collective). `record_args=False` writes NCCL kernels with no c10d args (older PyTorch),
    `record_seq=False` all of them but `Seq`.
    """

    ranks: int = 16
    steps: int = 3
    collectives: int = 4  # per step
    compute_us: float = 300.0
    transfer_us: float = 40.0
    load_us: float = 100.0
    slow_rank: int | None = None
    slow_us: float = 0.0
    load_skew_us: float = 0.0
    compute_skew_us: float = 0.0
    jitter_us: float = 2.0
    seed: int = 0
    process_group: str = "0"
    collective: str = "allreduce"
    nelems: int = 1 << 20
    record_args: bool = True
    record_seq: bool = True

    def load_extra(self, rank: int) -> float:
        return self.load_skew_us * self._ramp(rank)

    def compute_extra(self, rank: int) -> float:
        """What rank `rank` computes beyond `compute_us` before each collective."""
        slow = self.slow_us if rank == self.slow_rank else 0.0
        return slow + self.compute_skew_us * self._ramp(rank)

    def _ramp(self, rank: int) -> float:
        return rank / (self.ranks - 1) if self.ranks > 1 else 0.0


class _RankWriter(_Writer):
    """One rank's events: launching ops, their launches and flows, kernels on two streams."""

    def __init__(self, plan: JobPlan, rank: int) -> None:
        super().__init__()
        self.plan, self.rank = plan, rank

    def kernel(
        self, op: str, kernel: str, ts: float, dur: float, stream: int, inputs: tuple, **args: Any
    ) -> None:
        """`op` (its `inputs`: shapes and dtype, and `args`) launching `kernel` on `stream` at
        `ts` for `dur`; the kernel carries `args` too, as NCCL kernels carry the c10d args."""
        self.external += 1
        self.correlation += 1
        start = ts - OP_LEAD_US
        self.x(
            "cpu_op",
            op,
            start,
            OP_LEAD_US - 3.0,
            HOST_PID,
            MAIN_TID,
            **{"External id": self.external, **_shapes(*inputs), **args},
        )
        ids = {"External id": self.external, "correlation": self.correlation}
        call = ts - LAUNCH_LEAD_US
        self.x("cuda_runtime", "cudaLaunchKernel", call, 5.0, HOST_PID, MAIN_TID, **ids, cbid=211)
        shape = {"grid": [64, 1, 1], "block": [256, 1, 1]}
        self.x(
            "kernel",
            kernel,
            ts,
            dur,
            GPU_PID,
            stream,
            **ids,
            device=0,
            stream=stream,
            **shape,
            **args,
        )
        flow = {"id": self.correlation, "cat": "ac2g", "name": "ac2g"}
        self.events.append({"ph": "s", **flow, "pid": HOST_PID, "tid": MAIN_TID, "ts": call})
        self.events.append(
            {"ph": "f", **flow, "pid": GPU_PID, "tid": stream, "ts": round(ts, 3), "bp": "e"}
        )

    def collective_args(self, seq: int) -> dict[str, Any]:
        p = self.plan
        if not p.record_args:
            return {}
        args = {
            "Collective name": p.collective,
            "Process Group Name": p.process_group,
            "Process Group Description": "default_pg",
            "Process Group Ranks": list(range(p.ranks)),
            "Group size": p.ranks,
            "dtype": "Float",
            "In msg nelems": p.nelems,
            "Out msg nelems": p.nelems,
            "In split size": [],
            "Out split size": [],
        }
        return {**args, "Seq": seq} if p.record_seq else args


def _simulate(plan: JobPlan, writers: list[_RankWriter]) -> None:
    """Lay out every rank's steps on one shared clock (see the module docstring)."""
    jitter = random.Random(plan.seed)
    now = [BASE_US] * plan.ranks
    seq = 0
    for step in range(plan.steps):
        starts = list(now)
        for r, w in enumerate(writers):
            load = plan.load_us + plan.load_extra(r)
            w.x("user_annotation", DATA_LOADER, now[r], load - 20.0, HOST_PID, MAIN_TID)
            now[r] += load
        for _ in range(plan.collectives):
            seq += 1
            arrive = []
            for r, w in enumerate(writers):
                compute = (
                    plan.compute_us + plan.compute_extra(r) + jitter.uniform(0, plan.jitter_us)
                )
                w.kernel("aten::mm", GEMM, now[r], compute, COMPUTE_STREAM, MM_INPUTS)
                arrive.append(now[r] + compute)
            end = max(arrive) + plan.transfer_us
            for r, w in enumerate(writers):
                args = w.collective_args(seq)
                w.kernel(
                    "c10d::allreduce_",
                    ALL_REDUCE,
                    arrive[r],
                    end - arrive[r],
                    COMM_STREAM,
                    ([[plan.nelems]], "float"),
                    **args,
                )
                now[r] = end
        for r, w in enumerate(writers):
            w.x(
                "user_annotation",
                f"ProfilerStep#{step}",
                starts[r] - 1.0,
                now[r] - starts[r] + 2.0,
                HOST_PID,
                MAIN_TID,
            )


def _document(plan: JobPlan, w: _RankWriter) -> dict[str, Any]:
    ranks = list(range(plan.ranks))
    group = {
        "pg_name": plan.process_group,
        "pg_desc": "default_pg",
        "backend_config": "cuda:nccl",
        "pg_size": plan.ranks,
        "ranks": ranks,
    }
    return {
        "schemaVersion": 1,
        "deviceProperties": [DEVICE],
        "distributedInfo": {
            "backend": "nccl",
            "rank": w.rank,
            "world_size": plan.ranks,
            "pg_count": 1,
            "pg_config": [group],
        },
        "record_shapes": 1,
        "cuda_runtime_version": 12040,
        "traceEvents": w.events,
        "traceName": f"rooflens_synthetic_job_rank{w.rank}",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
    }


def write_job(folder: Path, plan: JobPlan = JobPlan()) -> list[Path]:
    """Write `rank<r>.pt.trace.json.gz` for every rank of `plan` into `folder`."""
    writers = [_RankWriter(plan, r) for r in range(plan.ranks)]
    _simulate(plan, writers)
    return [
        write_document(Path(folder) / f"rank{w.rank}.pt.trace.json.gz", _document(plan, w))
        for w in writers
    ]
