"""`rooflens serve --http` on 127.0.0.1 (a free port): a client with the token gets the tools,
one without it gets 401."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

TOKEN = "test-token-123"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path):
    port = free_port()
    env = {**os.environ, "ROOFLENS_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "rooflens.server.cli", "serve", "--http", "--port", str(port),
         "--allow-dir", str(tmp_path)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("the HTTP server did not start: " + proc.stderr.read().decode()[-2000:])
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.anyio
async def test_http_with_the_bearer_token_lists_tools(http_server) -> None:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    with anyio.fail_after(30):
        async with Client(streamable_http_client(http_server, http_client=http)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
    assert "load_trace" in names


@pytest.mark.anyio
async def test_http_without_the_token_is_refused(http_server) -> None:
    async with httpx2.AsyncClient() as http:
        response = await http.post(http_server, json={})
    assert response.status_code == 401
    assert "bearer token" in response.text
