"""Fixtures of the MCP tests: a server over the generator's sample trace, in both protocol eras.

Every MCP test runs on traces our own generator writes, so none of them needs ../shared.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client

from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.server.app import ServerConfig, build_server

MODES = ("auto", "legacy")  # the 2026-07-28 era and the 2025-11-25 handshake era


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def allowed(tmp_path: Path) -> Path:
    """The one allowed directory; siblings of it count as outside."""
    folder = tmp_path / "allowed"
    folder.mkdir()
    return folder


@pytest.fixture
def sample(allowed: Path) -> Path:
    return write_sample_trace(allowed / "sample_step.json.gz")


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def connect(allowed: Path, mode: str) -> Callable[..., Client]:
    """A client of a new server allowed only `allowed` (config overrides as keywords)."""

    def make(**overrides) -> Client:
        config = ServerConfig(allowed_dirs=[allowed], **overrides)
        return Client(build_server(config), mode=mode)

    return make
