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

from .host import DATA_LOADER, GEMM
from .rank import COMM_STREAM, COMPUTE_STREAM, RankTrace
from .sample import write_document

BASE_US = 9_000_000_000.0
MM_INPUTS = ([[2048, 4096], [4096, 4096]], "c10::BFloat16")  # ~23 % of an H100's bf16 peak
LOADER_TAIL_US = 20.0  # the data loader's span ends this long before the step's first kernel


@dataclass(frozen=True, slots=True)
class CollectiveKind:
    """How one c10d collective appears in a trace, and its message per rank."""

    op: str
    kernel: str
    in_share: int  # input nelems = plan.nelems // in_share (the full message is plan.nelems)
    out_share: int


COLLECTIVES = {
    "allreduce": CollectiveKind(
        "c10d::allreduce_",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        1,
        1,
    ),
    "_allgather_base": CollectiveKind(
        "c10d::_allgather_base_",
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        0,  # 0: divided by the group size
        1,
    ),
    "_reduce_scatter_base": CollectiveKind(
        "c10d::_reduce_scatter_base_",
        "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        1,
        0,
    ),
    "all_to_all": CollectiveKind(
        "c10d::alltoall_base_",
        "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
        1,
        1,
    ),
}
ALL_REDUCE = COLLECTIVES["allreduce"].kernel


@dataclass(frozen=True)
class JobPlan:
    """What the generated job does; times in µs.

    `slow_rank` computes `slow_us` longer before every collective (the planted straggler);
    `late_rank` loads its data `late_us` longer at the start of every step (a late batch: its
    GPU idles and it arrives last at the step's first collective). `load_skew_us` and
    `compute_skew_us` make data loading and compute uneven, rank r taking
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
    late_rank: int | None = None
    late_us: float = 0.0
    load_skew_us: float = 0.0
    compute_skew_us: float = 0.0
    jitter_us: float = 2.0
    seed: int = 0
    process_group: str = "0"
    collective: str = "allreduce"
    nelems: int = 1 << 18
    record_args: bool = True
    record_seq: bool = True

    def __post_init__(self) -> None:
        if self.collective not in COLLECTIVES:
            raise ValueError(f"collective {self.collective!r}: one of {sorted(COLLECTIVES)}")

    def load_extra(self, rank: int) -> float:
        late = self.late_us if rank == self.late_rank else 0.0
        return late + self.load_skew_us * self._ramp(rank)

    def compute_extra(self, rank: int) -> float:
        """What rank `rank` computes beyond `compute_us` before each collective."""
        slow = self.slow_us if rank == self.slow_rank else 0.0
        return slow + self.compute_skew_us * self._ramp(rank)

    def straggler_delay_us(self) -> float:
        """Per step, how much later the job's collectives start because of the planted
        straggler (slow or late rank) than had it kept pace with the others, up to jitter."""
        return self.collectives * self.slow_us * (self.slow_rank is not None) + self.late_us * (
            self.late_rank is not None
        )

    def message(self) -> tuple[int, int]:
        """Input and output element counts per rank of one collective."""
        kind = COLLECTIVES[self.collective]
        return (self.nelems // (kind.in_share or self.ranks)), (
            self.nelems // (kind.out_share or self.ranks)
        )

    def _ramp(self, rank: int) -> float:
        return rank / (self.ranks - 1) if self.ranks > 1 else 0.0


def _collective_args(plan: JobPlan, seq: int) -> dict[str, Any]:
    """The c10d args Kineto records on a collective's kernel and operator."""
    if not plan.record_args:
        return {}
    n_in, n_out = plan.message()
    args = {
        "Collective name": plan.collective,
        "Process Group Name": plan.process_group,
        "Process Group Description": "default_pg",
        "Process Group Ranks": list(range(plan.ranks)),
        "Group size": plan.ranks,
        "dtype": "Float",
        "In msg nelems": n_in,
        "Out msg nelems": n_out,
        "In split size": [],
        "Out split size": [],
    }
    return {**args, "Seq": seq} if plan.record_seq else args


def _step(plan: JobPlan, ranks: list[RankTrace], now: list[float], jitter, seq: int) -> int:
    """One step on every rank from `now` (updated): loading, then compute and collective
    pairs. Returns the last sequence number used."""
    kind = COLLECTIVES[plan.collective]
    for r, w in enumerate(ranks):
        load = plan.load_us + plan.load_extra(r)
        w.annotation(DATA_LOADER, now[r], load - LOADER_TAIL_US)
        now[r] += load
    for _ in range(plan.collectives):
        seq += 1
        arrive = []
        for r, w in enumerate(ranks):
            compute = plan.compute_us + plan.compute_extra(r) + jitter.uniform(0, plan.jitter_us)
            w.kernel("aten::mm", GEMM, now[r], compute, COMPUTE_STREAM, MM_INPUTS)
            arrive.append(now[r] + compute)
        end = max(arrive) + plan.transfer_us
        inputs = ([[plan.message()[0]]], "float")
        for r, w in enumerate(ranks):
            args = _collective_args(plan, seq)
            w.kernel(kind.op, kind.kernel, arrive[r], end - arrive[r], COMM_STREAM, inputs, **args)
            now[r] = end
    return seq


def _simulate(plan: JobPlan, ranks: list[RankTrace]) -> None:
    """Lay out every rank's steps on one shared clock (see the module docstring)."""
    jitter = random.Random(plan.seed)
    now = [BASE_US] * plan.ranks
    seq = 0
    for step in range(plan.steps):
        starts = list(now)
        seq = _step(plan, ranks, now, jitter, seq)
        for r, w in enumerate(ranks):
            w.annotation(f"ProfilerStep#{step}", starts[r] - 1.0, now[r] - starts[r] + 2.0)


def _group(plan: JobPlan) -> dict[str, Any]:
    return {
        "pg_name": plan.process_group,
        "pg_desc": "default_pg",
        "backend_config": "cuda:nccl",
        "pg_size": plan.ranks,
        "ranks": list(range(plan.ranks)),
    }


def write_job(folder: Path, plan: JobPlan = JobPlan()) -> list[Path]:
    """Write `rank<r>.pt.trace.json.gz` for every rank of `plan` into `folder`."""
    ranks = [RankTrace(r) for r in range(plan.ranks)]
    _simulate(plan, ranks)
    return [
        write_document(
            Path(folder) / f"rank{w.rank}.pt.trace.json.gz", w.document(plan.ranks, _group(plan))
        )
        for w in ranks
    ]
