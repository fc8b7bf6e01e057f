"""Over HTTP, each session sees only its own runs (two clients of one server on a real port),
unless the server is started with a shared workspace on purpose."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from rooflens.analyzers.synthetic.sample import write_sample_trace
from tests.helpers.http_server import BEARER, start, stop
from tests.helpers.mcp_client import call, error_of

pytestmark = pytest.mark.slow  # servers started as processes


def session(url: str) -> Client:
    """A handshake-era client: its requests carry an Mcp-Session-Id of its own."""
    http = create_mcp_http_client(headers=BEARER)
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


async def runs_listed(client: Client) -> list[str]:
    listed = (await client.read_resource("rooflens://runs")).contents[0].text
    return [r["run_id"] for r in json.loads(listed)["runs"]]


@pytest.mark.anyio
async def test_two_sessions_do_not_see_each_others_runs(tmp_path: Path) -> None:
    trace = write_sample_trace(tmp_path / "sample.json.gz")
    proc, served = start(tmp_path)
    try:
        with anyio.fail_after(90):
            alice, bob = session(served.url), session(served.url)
            async with alice, bob:
                mine = await call(alice, "load_trace", {"path": str(trace)})
                theirs = await call(bob, "load_trace", {"path": str(trace)})
                refused = await error_of(bob, "prepare_category_data", {"run_id": mine["run_id"]})
                alice_sees, bob_sees = await runs_listed(alice), await runs_listed(bob)
                with pytest.raises(MCPError, match="unknown run id"):
                    await bob.read_resource(f"rooflens://runs/{mine['run_id']}/tables")
    finally:
        stop(proc)
    assert theirs["run_id"] != mine["run_id"] and theirs["reused"] is False
    assert "unknown run id" in refused
    assert alice_sees == [mine["run_id"]] and bob_sees == [theirs["run_id"]]


@pytest.mark.anyio
async def test_a_shared_workspace_is_shared_on_purpose(tmp_path: Path) -> None:
    trace = write_sample_trace(tmp_path / "sample.json.gz")
    proc, served = start(tmp_path, "--shared-workspace")
    try:
        with anyio.fail_after(90):
            alice, bob = session(served.url), session(served.url)
            async with alice, bob:
                mine = await call(alice, "load_trace", {"path": str(trace)})
                again = await call(bob, "load_trace", {"path": str(trace)})
                prepared = await call(bob, "prepare_category_data", {"run_id": mine["run_id"]})
    finally:
        stop(proc)
    assert again["run_id"] == mine["run_id"] and again["reused"]
    assert prepared["categories"]
