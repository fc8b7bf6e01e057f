"""A pair of traces that are not like for like, for the comparability check
(compare/comparability.py): trace 1 a 2-rank job compiled by torch.compile, trace 2 an
8-rank eager one. Both run the same layers (a GEMM, an add, an all-reduce), but trace 1's
all-reduce takes `allreduce1_us` and trace 2's `allreduce2_us` (another job size), and the
add is slower in trace 2 (`add2_us`): the only compute difference, which the headline must
name rather than the collective.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .kernels import NCCL_ALL_REDUCE, NV_GEMM
from .writer import Writer

ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
TRITON = "triton_poi_fused_add_0"
MM_DIMS = {"Input Dims": [[2048, 4096], [4096, 4096]], "Input type": ["float", "float"]}


@dataclass(frozen=True)
class UnlikePlan:
    layers: int = 8
    mm_us: float = 300.0
    add1_us: float = 100.0
    add2_us: float = 160.0
    allreduce1_us: float = 200.0
    allreduce2_us: float = 900.0


def write_unlike_pair(folder: Path, plan: UnlikePlan = UnlikePlan()) -> tuple[Path, Path]:
    return (
        _write(Path(folder) / "compiled_2rank.json.gz", plan, ranks=2, compiled=True),
        _write(Path(folder) / "eager_8rank.json.gz", plan, ranks=8, compiled=False),
    )


def _write(path: Path, plan: UnlikePlan, *, ranks: int, compiled: bool) -> Path:
    w = Writer(device=H100, host_pid=8080, main_tid=8080)
    t = 1_000_000.0
    add_us = plan.add1_us if compiled else plan.add2_us
    reduce_us = plan.allreduce1_us if compiled else plan.allreduce2_us
    start = t
    for _ in range(plan.layers):
        got = w.launching_op("aten::mm", NV_GEMM, t, plan.mm_us, op_args=MM_DIMS)
        t = max(t + 20.0, got.call_end + 5.0)
        got = w.launching_op("aten::add", TRITON if compiled else ADD, t, add_us)
        t = max(t + 20.0, got.call_end + 5.0)
        got = w.launching_op("c10d::allreduce_", NCCL_ALL_REDUCE, t, reduce_us, stream=21)
        t = max(t + 20.0, got.call_end + 5.0)
    if compiled:
        w.op("CompiledFunction", start - 2.0, t)
    t = w.sync(t) + 1.0
    w.step(0, start - 5.0, t)
    info = {"backend": "nccl", "rank": 0, "world_size": ranks}
    return w.write(path, "unlike", distributedInfo=info)
