"""Each rank's task on Dask: an embedded `LocalCluster` of worker processes sized to the
machine, or the scheduler of a real cluster (`--scheduler tcp://host:8786`, or
`DASK_SCHEDULER_ADDRESS`).

Only work orders (`RankTask`: a path and a few options) go to the workers and only small
outcomes come back (`RankDone`/`RankFailed`, rank_task.py): every worker reads its own trace,
so no trace passes through the scheduler and the client's memory does not grow with the job.
A worker holds one rank at a time (one thread), so a job's memory is bounded by the number of
workers, never by the number of ranks. The only module that imports dask.distributed.

The embedded cluster speaks mutual TLS with credentials made for it in memory and listens on
127.0.0.1 only, so no other process can submit work to it; it lives as long as the job.
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import dask
from distributed import Client, LocalCluster, Security, as_completed

from .cluster import (
    SCHEDULER_ENV,
    TLS_ENV,
    ClientTls,
    ClusterChoice,
    ClusterError,
    Progress,
    scheduler_problem,
)
from .rank_task import (
    WORKER_LOST,
    RankFailed,
    RankOutcome,
    RankTask,
    run_rank,
)

EMBEDDED_CONFIG = {
    # a rank that kills its worker (out of memory) is reported, not retried on every worker
    "distributed.scheduler.allowed-failures": 0,
    # the status servers (plain HTTP, not covered by the TLS) answer /health and nothing
    # else: no page listing workers, tasks, their arguments, logs or tracebacks
    "distributed.scheduler.http.routes": ["distributed.http.health"],
    "distributed.worker.http.routes": ["distributed.http.health"],
}


@contextmanager
def cluster_client(choice: ClusterChoice, paths: Sequence[Path]) -> Iterator[Client]:
    """A client of the chosen scheduler, or of an embedded cluster closed on the way out."""
    if choice.scheduler:
        with _scheduler_client(choice) as client:
            yield client
        return
    choice = choice.resolved(paths)
    # the scheduler lives in this process: its INFO lines would reach any handler the host
    # program set up (the MCP server's log on stderr); only problems are worth showing
    logging.getLogger("distributed").setLevel(logging.WARNING)
    with dask.config.set(EMBEDDED_CONFIG):
        cluster = LocalCluster(
            n_workers=choice.workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=choice.memory_limit,
            # mutual TLS with a CA, certificate and key made here, in memory: only this
            # process and the workers it spawns (handed them through the spawn pipe) hold
            # them, so no other process, of this user or another, can submit work
            security=Security.temporary(),
            protocol="tls",
            host="127.0.0.1",  # nothing of the embedded cluster listens beyond this machine
            # status routes on a free loopback port: a bare ":0" listens on every interface,
            # and the default 8787 may be taken by another cluster; no dashboard pages
            dashboard_address="127.0.0.1:0",
            scheduler_kwargs={"dashboard": False},
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster, set_as_default=False) as client:
                yield client
        finally:
            cluster.close()


@contextmanager
def _scheduler_client(choice: ClusterChoice) -> Iterator[Client]:
    """A client of a running scheduler, with the security Dask's configuration gives."""
    address = str(choice.scheduler)
    security = _client_security(address)
    try:
        client = Client(address, timeout=choice.timeout_s, set_as_default=False, security=security)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(
            f"cannot reach the Dask scheduler at {address} ({exc}); start it "
            f"(`dask scheduler`), or omit --scheduler and unset {SCHEDULER_ENV} to run "
            "on this machine"
        ) from None
    with client:
        yield client


def _client_security(address: str) -> Security:
    """`Security()`, built from Dask's configuration (its TLS files, if any), checked before
    anything connects: a tls:// address without certificates, a tcp:// one when encryption is
    required, or TLS files that cannot be loaded are errors that say what to fix."""
    problem = scheduler_problem(address, ClientTls.from_dask_config())
    if problem:
        raise ClusterError(problem)
    try:
        security = Security()
        security.get_connection_args("client")  # loads the CA, certificate and key, if any
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        raise ClusterError(
            f"cannot use the TLS configuration Dask gives for {address} ({exc}); check "
            f"{', '.join(TLS_ENV)}"
        ) from None
    return security


def fan_out(
    tasks: Sequence[RankTask],
    client: Client,
    progress: Progress | None = None,
    run: Callable[[RankTask], RankOutcome] = run_rank,
) -> list[RankOutcome]:
    """Run every task on the client's cluster (`run`: what a worker does with a task, the
    rank's pipeline); one outcome per task, in rank order. A task whose worker died (killed
    for its memory, lost) is a RankFailed like any other.

    No more tasks are in flight than the cluster has threads: each worker holds the rank it
    analyses and no queued one, so a worker that dies takes only its own rank with it (the
    scheduler would otherwise hand a worker several, and fail them all), on any scheduler."""
    token = secrets.token_hex(4)
    waiting = list(reversed(tasks))
    by_key: dict[str, RankTask] = {}
    running = as_completed(loop=client.loop)

    def submit(free: int) -> None:
        for _ in range(min(free, len(waiting))):
            task = waiting.pop()
            key = f"rooflens-rank-{task.rank}-{token}"
            by_key[key] = task
            running.add(client.submit(run, task, key=key, pure=False, retries=0))

    submit(_threads(client))
    outcomes: list[RankOutcome] = []
    for future in running:
        task = by_key.pop(future.key)
        try:
            outcome = future.result()
        except Exception as exc:  # the worker, not the task, failed: killed or unreachable
            outcome = RankFailed(task.rank, task.path, WORKER_LOST, _lost(exc))
        future.release()
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome, len(outcomes), len(tasks))
        submit(_threads(client) - len(by_key))
    return sorted(outcomes, key=lambda o: o.rank)


def _threads(client: Client) -> int:
    """The cluster's threads now (a cluster may still be growing); at least one."""
    return max(1, sum(client.nthreads().values()))


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
