"""Each rank's task on Dask: an embedded `LocalCluster` of worker processes sized to the
machine, or the scheduler of a real cluster (`--scheduler tcp://host:8786`, or
`DASK_SCHEDULER_ADDRESS`).

Only work orders (`RankTask`: a path and a few options) go to the workers and only small
outcomes come back (`RankDone`/`RankFailed`, rank_task.py): every worker reads its own trace,
so no trace passes through the scheduler and the client's memory does not grow with the job.
A worker holds one rank at a time (one thread), so a job's memory is bounded by the number of
workers, never by the number of ranks. The only module that imports dask.
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dask
import psutil
from distributed import Client, LocalCluster, as_completed

from rooflens.analyzers.job.rank_task import (
    WORKER_LOST,
    RankFailed,
    RankOutcome,
    RankTask,
    run_rank,
)

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
CONNECT_TIMEOUT_S = 20
# What one worker holds while it analyses a rank: the interpreter with the engine imported,
# plus a multiple of the trace's JSON text (benchmarks/bench_job.py measures both).
WORKER_BASE_BYTES = 400 << 20
BYTES_PER_JSON_BYTE = 8.0
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


@contextmanager
def cluster_client(choice: ClusterChoice, paths: Sequence[Path]) -> Iterator[Client]:
    """A client of the chosen scheduler, or of an embedded cluster closed on the way out."""
    if choice.scheduler:
        try:
            client = Client(choice.scheduler, timeout=choice.timeout_s, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(
                f"cannot reach the Dask scheduler at {choice.scheduler} ({exc}); start it "
                f"(`dask scheduler`), or omit --scheduler and unset {SCHEDULER_ENV} to run "
                "on this machine"
            ) from None
        with client:
            yield client
        return
    choice = choice.resolved(paths)
    # a rank that kills its worker (out of memory) is reported, not retried on every worker
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        cluster = LocalCluster(
            n_workers=choice.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=choice.memory_limit,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster, set_as_default=False) as client:
                yield client
        finally:
            cluster.close()


def fan_out(
    tasks: Sequence[RankTask], client: Client, progress: Progress | None = None
) -> list[RankOutcome]:
    """Run every task on the client's cluster; one outcome per task, in rank order. A task
    whose worker died (killed for its memory, lost) is a RankFailed like any other."""
    if not tasks:
        return []
    token = secrets.token_hex(4)
    keys = [f"rooflens-rank-{t.rank}-{token}" for t in tasks]
    futures = client.map(run_rank, tasks, key=keys, pure=False, retries=0)
    by_key = {f.key: t for f, t in zip(futures, tasks, strict=True)}
    outcomes: list[RankOutcome] = []
    for future in as_completed(futures, loop=client.loop):
        task = by_key[future.key]
        try:
            outcome = future.result()
        except Exception as exc:  # the worker, not the task, failed: killed or unreachable
            outcome = RankFailed(task.rank, task.path, WORKER_LOST, _lost(exc))
        future.release()
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome, len(outcomes), len(tasks))
    return sorted(outcomes, key=lambda o: o.rank)


def _lost(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    reason = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    if "memory" in text.lower() or type(exc).__name__ == "KilledWorker":
        reason += (
            "; the worker died while analysing this rank, most often for lack of memory: "
            "run fewer workers (--workers) so each has more"
        )
    return reason


def run_tasks(
    tasks: Sequence[RankTask], choice: ClusterChoice, progress: Progress | None = None
) -> list[RankOutcome]:
    """Start (or reach) the cluster, run the tasks, close what was started."""
    with cluster_client(choice, [Path(t.path) for t in tasks]) as client:
        return fan_out(tasks, client, progress)
