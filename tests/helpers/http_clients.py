"""SDK clients of `rooflens serve --http` in each protocol era, and what they are listed."""

from __future__ import annotations

import json

from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from tests.helpers.http_server import BEARER


def session_client(url: str) -> Client:
    """A handshake-era client (2025-11-25): its requests carry an Mcp-Session-Id of its own."""
    http = create_mcp_http_client(headers=BEARER)
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


def stateless_client(url: str) -> Client:
    """The SDK's default client: the 2026-07-28 era, one self-contained request per call."""
    http = create_mcp_http_client(headers=BEARER)
    return Client(streamable_http_client(url, http_client=http))


async def runs_listed(client: Client) -> list[str]:
    """The run ids the `rooflens://runs` resource lists to `client`."""
    listed = (await client.read_resource("rooflens://runs")).contents[0].text
    return [r["run_id"] for r in json.loads(listed)["runs"]]


async def resource_uris(client: Client) -> list[str]:
    """Every URI resources/list gives `client` (the runs' artifacts among them)."""
    return [str(r.uri) for r in (await client.list_resources()).resources]
