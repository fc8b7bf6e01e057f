"""Where a job's rank tasks run and how many at a time: the choice between an embedded
cluster sized to the machine and the job, and a running scheduler. Imports no dask, so the
faces can check and describe a choice without loading it (fanout.py runs it).
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from rooflens.analyzers.job.rank_task import RankOutcome

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
CONNECT_TIMEOUT_S = 20
# What one worker holds while it analyses a rank: the interpreter with the engine imported,
# plus a multiple of the trace's JSON text. benchmarks/bench_job.py measured a worker at about
# 225 MB after small ranks' whole runs, and a rank's run to its report at 4.7 bytes per byte
# of JSON above the interpreter's; both figures here keep a margin.
WORKER_BASE_BYTES = 300 << 20
BYTES_PER_JSON_BYTE = 6.0
MEMORY_SHARE = 0.8  # of the memory available now, what an embedded cluster may use

Progress = Callable[[RankOutcome, int, int], None]  # (outcome, ranks finished, ranks in all)


class ClusterError(RuntimeError):
    """The cluster could not be started or reached; the message says what to do."""


@dataclass(frozen=True)
class ClusterChoice:
    """Where the tasks run: `scheduler` (an address) or an embedded cluster of `workers`
    processes (None: sized to the machine and the job) of `memory_limit` bytes each."""

    scheduler: str | None = None
    workers: int | None = None
    memory_limit: int | None = None
    timeout_s: float = CONNECT_TIMEOUT_S  # how long to try reaching `scheduler`

    @classmethod
    def from_args(
        cls, scheduler: str | None, workers: int | None, memory_limit: int | None = None
    ) -> ClusterChoice:
        return cls(scheduler or os.environ.get(SCHEDULER_ENV) or None, workers, memory_limit)

    def resolved(self, paths: Sequence[Path]) -> ClusterChoice:
        """The same choice with an embedded cluster's size and memory limit decided."""
        if self.scheduler:
            return self
        workers = local_workers(paths, self.workers)
        limit = self.memory_limit or max(
            rank_memory_bytes(paths), int(psutil.virtual_memory().total * MEMORY_SHARE) // workers
        )
        return ClusterChoice(None, workers, limit, self.timeout_s)


def json_bytes(path: Path) -> int:
    """The size of a trace's JSON text: a plain file's size; a gzip file's ISIZE trailer
    (modulo 4 GiB, so a smaller figure than the file itself means the text is larger)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        if f.read(2) != b"\x1f\x8b" or size < 18:
            return size
        f.seek(-4, os.SEEK_END)
        text = int.from_bytes(f.read(4), "little")
    return text if text >= size else size * 10


def rank_memory_bytes(paths: Sequence[Path]) -> int:
    """What one worker needs for the largest rank of the job (estimate)."""
    largest = max((json_bytes(p) for p in paths), default=0)
    return WORKER_BASE_BYTES + int(BYTES_PER_JSON_BYTE * largest)


def local_workers(paths: Sequence[Path], requested: int | None, budget: int | None = None) -> int:
    """How many worker processes an embedded cluster starts: `requested`, else one per core,
    no more than ranks, and no more than fit in `budget` bytes (default: MEMORY_SHARE of the
    memory available now) when each holds the job's largest rank."""
    if requested is not None:
        if requested < 1:
            raise ClusterError(f"--workers {requested}: give at least 1 worker")
        return requested
    budget = budget or int(psutil.virtual_memory().available * MEMORY_SHARE)
    fit = max(1, budget // rank_memory_bytes(paths))
    return max(1, min(os.cpu_count() or 1, len(paths), fit))
