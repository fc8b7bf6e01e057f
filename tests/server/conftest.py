"""Fixtures of the MCP tests: a server over the generator's sample trace, in both protocol eras
and over each transport (tests/helpers/transports.py): a test taking `connect` runs in memory
and over HTTP on 127.0.0.1, and also over stdio when marked `stdio`; the HTTP and stdio legs
and the handshake era are `slow` (the fast subset: in memory, 2026-07-28).

Every MCP test runs on traces our own generator writes, so none of them needs ../shared.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from mcp import Client

from rooflens.analyzers.synthetic.sample import write_sample_trace
from tests.helpers.transports import connection


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


# the 2026-07-28 era ("auto") and the 2025-11-25 handshake era ("legacy")
@pytest.fixture(params=["auto", pytest.param("legacy", marks=pytest.mark.slow)])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`transport` for every test that connects: memory and HTTP, and stdio when marked;
    a test that names its own transports keeps them."""
    given = any("transport" in m.args[0] for m in metafunc.definition.iter_markers("parametrize"))
    if "transport" in metafunc.fixturenames and not given:
        stdio = metafunc.definition.get_closest_marker("stdio") is not None
        extra = [pytest.param("stdio", marks=pytest.mark.slow)] if stdio else []
        http = pytest.param("http", marks=pytest.mark.slow)  # a server on a socket
        metafunc.parametrize("transport", ["memory", http, *extra])


@pytest.fixture
def connect(
    allowed: Path, mode: str, transport: str
) -> Callable[..., AbstractAsyncContextManager[Client]]:
    """A client of a new server allowed only `allowed` (config overrides as keywords), over
    the test's transport in the test's protocol era."""

    def make(**overrides) -> AbstractAsyncContextManager[Client]:
        return connection(transport, mode, allowed, **overrides)

    return make
