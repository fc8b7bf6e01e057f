"""What the Dask cluster tests share: a free loopback port, and the check that a cluster left
no process behind."""

from __future__ import annotations

import socket
import time

import psutil


def cluster_children() -> list[psutil.Process]:
    """This process's children but multiprocessing's resource tracker (started once by the
    first spawned worker, it lives as long as this process and holds no cluster)."""
    kids = psutil.Process().children(recursive=True)
    return [p for p in kids if "resource_tracker" not in " ".join(p.cmdline())]


def no_children_left(timeout: float = 15.0) -> list[psutil.Process]:
    """Cluster processes still alive after `timeout` seconds (none, when clean)."""
    deadline = time.monotonic() + timeout
    while (alive := cluster_children()) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
