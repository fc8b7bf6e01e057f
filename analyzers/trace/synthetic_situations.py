"""Every generated situation of an idle or misread GPU, by name: its writer, plan and planted
answer (synthetic_planted.py), for tests and demos to iterate over."""

from __future__ import annotations

from functools import partial

from rooflens.analyzers.trace import synthetic_dispatch as dispatch
from rooflens.analyzers.trace import synthetic_idle as idle
from rooflens.analyzers.trace.synthetic_planted import Situation


def _situations() -> list[Situation]:
    return [
        Situation(
            "allocator_churn",
            "hipFree/hipMalloc in every backward, frees 10x slower from the third iteration",
            partial(idle.write_allocator_churn_trace, vendor="amd"),
            idle.ALLOCATOR_CHURN,
            lambda seed: idle.allocator_churn_planted("amd"),
        ),
        Situation(
            "allocator_churn_cuda",
            "the same churn on an H100: cudaFree/cudaMalloc",
            partial(idle.write_allocator_churn_trace, vendor="nvidia"),
            idle.ALLOCATOR_CHURN,
            lambda seed: idle.allocator_churn_planted("nvidia"),
        ),
        Situation(
            "single_process_loader",
            "num_workers=0: a 48-62 ms DataLoader __next__ gap every step",
            idle.write_single_loader_trace,
            idle.SINGLE_LOADER,
            partial(idle.loader_planted, idle.SINGLE_LOADER),
        ),
        Situation(
            "loader_stalls",
            "multi-worker DataLoader stalling 0.5-0.8 s every third or fourth iteration",
            idle.write_loader_stall_trace,
            idle.LOADER_STALLS,
            partial(idle.loader_planted, idle.LOADER_STALLS),
        ),
        Situation(
            "optimizer_gap",
            "Optimizer.step#Shampoo.step holding the host 57-64 ms every step",
            dispatch.write_optimizer_gap_trace,
            dispatch.OPTIMIZER_GAP,
            partial(dispatch.optimizer_planted, dispatch.OPTIMIZER_GAP),
        ),
    ]


SITUATIONS: dict[str, Situation] = {s.name: s for s in _situations()}
