"""Where a job's rank tasks run and how many at a time: the choice between an embedded
cluster sized to the machine and the job, and a running scheduler, and what to warn about
when the scheduler is off this machine without TLS. Loads no dask on import (only
`ClientTls.from_dask_config` reads dask's configuration), so the faces can check and describe a
choice without loading it (fanout.py runs it).
Design: docs/multirank.md#fan-out.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import psutil

from .rank_task import RankOutcome

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
# Dask's own configuration for a client's TLS, as environment variables (distributed.yaml:
# distributed.comm.tls.ca-file, .client.cert, .client.key, distributed.comm.require-encryption)
TLS_ENV = (
    "DASK_DISTRIBUTED__COMM__TLS__CA_FILE",
    "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT",
    "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY",
)


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


@dataclass(frozen=True)
class ClientTls:
    """What Dask's configuration gives a client to reach a running scheduler: a CA and a
    client certificate (mutual TLS), whether plain TCP is refused, the scheme of a bare
    host:port. `distributed.Security()` reads the same keys."""

    ca_file: str | None = None
    cert: str | None = None
    require_encryption: bool = False
    default_scheme: str = "tcp"

    @property
    def complete(self) -> bool:
        return bool(self.ca_file and self.cert)

    @classmethod
    def from_dask_config(cls) -> ClientTls:
        import dask.config  # loads when a job runs, like the rest of dask

        get = dask.config.get
        return cls(
            get("distributed.comm.tls.ca-file", None),
            get("distributed.comm.tls.client.cert", None),
            bool(get("distributed.comm.require-encryption", None)),
            get("distributed.comm.default-scheme", "tcp"),
        )


def scheme_and_host(address: str, default_scheme: str = "tcp") -> tuple[str, str | None]:
    """A Dask address's scheme and host (`tls://[::1]:8786` -> tls, ::1); None if unparsable."""
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = default_scheme, address
    try:
        return scheme.lower(), urlsplit(f"//{rest}").hostname
    except ValueError:
        return scheme.lower(), None


def is_loopback(host: str | None) -> bool:
    """Only this machine can reach it: localhost or a loopback IP literal (names are not
    resolved: a name that happens to point here is treated as remote)."""
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)  # ::ffff:127.0.0.1 reaches 127.0.0.1
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def scheduler_problem(address: str, tls: ClientTls) -> str | None:
    """Why a client configured as `tls` cannot reach `address` at all (Dask would fail with a
    TypeError or RuntimeError that names neither the cause nor the fix); None if it can try."""
    scheme, _ = scheme_and_host(address, tls.default_scheme)
    if scheme == "tls" and not tls.complete:
        return (
            f"the Dask scheduler address {address} asks for TLS, but Dask's configuration "
            f"gives no CA and client certificate: set {TLS_ENV[0]} and {TLS_ENV[1]} (and "
            f"{TLS_ENV[2]} unless the key is in the certificate file) to PEM files"
        )
    if scheme != "tls" and tls.require_encryption:
        return (
            f"Dask's configuration requires encryption (distributed.comm.require-encryption) "
            f"but the scheduler address {address} is not tls://: give its tls:// address"
        )
    return None


def scheduler_warning(address: str, tls: ClientTls) -> str | None:
    """A warning when work orders would travel to a scheduler off this machine without TLS:
    trace paths and results cross the network in clear, and whoever reaches that scheduler
    can run code on its workers. None for a loopback address or a configured tls:// one."""
    scheme, host = scheme_and_host(address, tls.default_scheme)
    if (scheme == "tls" and tls.complete) or is_loopback(host):
        return None
    return (
        f"the Dask scheduler at {address} is not on this machine and no TLS is configured: "
        "the ranks' work orders (trace paths) and results travel unencrypted, and anyone who "
        "can reach that scheduler can run code on its workers; use its tls:// address with "
        f"{', '.join(TLS_ENV)} set (docs/multirank.md#fan-out)"
    )


def cluster_warnings(choice: ClusterChoice) -> list[str]:
    """What a face tells the user about where the tasks go (nothing for an embedded cluster:
    it is reachable only with credentials this process made)."""
    if not choice.scheduler:
        return []
    warning = scheduler_warning(choice.scheduler, ClientTls.from_dask_config())
    return [warning] if warning else []


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
