"""One server, reached over each transport the MCP suite runs on, in either protocol era.

- `memory`: the SDK's in-memory client of the server object;
- `http`: the server's real streamable-HTTP app (`build_http_app`: Host/Origin checks, the
  bearer token, per-caller run ownership) served by uvicorn on a socket bound to 127.0.0.1
  port 0 by this process, so no other process can take the port between choosing and
  binding it; it runs on a thread of this process, so a test's monkeypatching reaches it;
- `stdio`: `rooflens serve` as a child process (a smoke subset: each one starts Python).

The era is the client's `mode`: "auto" speaks 2026-07-28 (stateless over HTTP), "legacy"
the 2025-11-25 handshake (a session over HTTP).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.server import MCPServer

from rooflens.server.app import ServerConfig, build_server
from rooflens.server.http_app import HttpOptions, build_http_app
from rooflens.server.owners import split_handle
from tests.helpers.http_server import BEARER, TOKEN

START_SECONDS = 20


@contextmanager
def served_over_http(server: MCPServer) -> Iterator[str]:
    """The URL of `server`'s HTTP app, served on 127.0.0.1 until the block ends."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = build_http_app(server, HttpOptions(port=port, token=TOKEN))
    config = uvicorn.Config(app.app, log_level="warning", timeout_graceful_shutdown=5)
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_SECONDS
        while not uv.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                pytest.fail("the in-process HTTP server did not start")
            time.sleep(0.01)
        yield app.url
    finally:
        uv.should_exit = True
        thread.join(START_SECONDS)
        sock.close()


@asynccontextmanager
async def over_http(server: MCPServer, mode: str) -> AsyncIterator[Client]:
    with served_over_http(server) as url:
        http = create_mcp_http_client(headers=BEARER)
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def stdio_parameters(allowed: Path, *flags: str) -> StdioServerParameters:
    """`rooflens serve` over stdio, allowed only `allowed`."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "rooflens.cli.main", "serve", "--allow-dir", str(allowed), *flags],
    )


def connection(transport: str, mode: str, allowed: Path, **overrides):
    """A client of a new server allowed only `allowed` over `transport`: an async context
    manager giving the connected `Client` (ServerConfig overrides as keywords)."""
    if transport == "stdio":
        if overrides:
            raise ValueError(f"the stdio leg takes no server overrides: {sorted(overrides)}")
        return Client(stdio_parameters(allowed), mode=mode)
    http = transport == "http"
    server = build_server(ServerConfig(allowed_dirs=[allowed], http=http, **overrides))
    return over_http(server, mode) if http else Client(server, mode=mode)


def plain_id(handle: str, kind: str = "run") -> str:
    """The run or job id inside a handle (a stateless HTTP caller's carries a key): the name
    of its folder, which never holds the key."""
    split = split_handle(handle, kind)
    assert split is not None, handle
    return split[0]


def keyed(transport: str, mode: str) -> bool:
    """Whether the caller is a stateless HTTP client: each of its calls is a new owner, its
    run ids carry a key and its loads are never reused (docs/security.md#http)."""
    return transport == "http" and mode == "auto"
