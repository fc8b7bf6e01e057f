"""`rooflens serve --http` as a real process on 127.0.0.1 (a free port), with a bearer token."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

TOKEN = "test-token-123"
BEARER = {"authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Served:
    port: int
    url: str
    stderr: Path


def start(tmp: Path, *args: str, token: str | None = TOKEN) -> tuple[subprocess.Popen, Served]:
    """Start the server and return once its port accepts connections (20 s at most)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "ROOFLENS_TOKEN"}
    if token is not None:
        env["ROOFLENS_TOKEN"] = token
    stderr = tmp / f"stderr-{port}.txt"
    command = [sys.executable, "-m", "rooflens.cli.main", "serve", "--http", "--port", str(port)]
    command += ["--allow-dir", str(tmp), *(a.replace("PORT", str(port)) for a in args)]
    with stderr.open("wb") as err:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, Served(port, f"http://127.0.0.1:{port}/mcp", stderr)
        time.sleep(0.05)
    proc.kill()
    proc.wait(timeout=10)
    pytest.fail(f"the HTTP server did not start: {stderr.read_text()[-2000:]}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
