"""`rooflens serve --http` prints only its start-up lines by default; with -v the MCP SDK's
session-manager lines and uvicorn's access lines come too, through the CLI's one handler."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.helpers.http_server import BEARER, start, stop


async def _list_tools(url: str) -> int:
    http = create_mcp_http_client(headers=BEARER)
    with anyio.fail_after(30):
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return len((await client.list_tools()).tools)


def _served_log(tmp_path: Path, *flags: str) -> list[str]:
    proc, served = start(tmp_path, *flags)
    try:
        assert anyio.run(_list_tools, served.url) > 10
    finally:
        stop(proc)
    return served.stderr.read_text().splitlines()


@pytest.mark.slow
def test_the_sdk_and_access_lines_only_with_verbose(tmp_path: Path) -> None:
    quiet = _served_log(tmp_path)
    assert len(quiet) == 1 and quiet[0].startswith("rooflens: serving MCP over streamable HTTP")
    loud = _served_log(tmp_path, "-v")
    assert "INFO mcp.server.streamable_http_manager: StreamableHTTP session manager started" in loud
    access = [line for line in loud if line.startswith("INFO uvicorn.access: 127.0.0.1:")]
    assert access and all('"POST /mcp HTTP/1.1" 200' in line for line in access)
