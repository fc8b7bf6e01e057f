"""Over HTTP a run or a job is visible and usable only to its owner: the session that made it
(handshake-era clients), or for a stateless (2026-07-28) client the key its handle carries.
Runs made over stdio are no HTTP caller's. One real server on 127.0.0.1 for the module (with
the token, which every client holds: it does not tell them apart), and one real stdio server
writing into the same workspace."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.server.state import AppState, ServerConfig
from tests.helpers.http_clients import (
    resource_uris,
    runs_listed,
    session_client,
    stateless_client,
)
from tests.helpers.http_server import Served, start, stop
from tests.helpers.mcp_client import call, error_of

pytestmark = pytest.mark.slow  # servers started as processes

HANDLE = re.compile(r"(run|job)-[0-9a-f]{12}-([0-9a-f]{32})")
FORGED_KEY = "0" * 32


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The allowed directory: a trace, a two-rank job, and a run made over stdio."""
    tmp = tmp_path_factory.mktemp("owners")
    write_sample_trace(tmp / "sample.json.gz")
    write_job(tmp / "job", JobPlan(ranks=2, steps=1, collectives=1))
    return tmp


@pytest.fixture(scope="module")
def local_run(folder: Path) -> str:
    """A run made by `rooflens serve` over stdio in the workspace the HTTP server uses."""

    async def made() -> str:
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "rooflens.cli.main", "serve", "--allow-dir", str(folder)],
        )
        async with Client(params) as client:
            return (await call(client, "load_trace", {"path": "sample.json.gz"}))["run_id"]

    return anyio.run(made)


@pytest.fixture(scope="module")
def served(folder: Path, local_run: str):
    proc, served = start(folder)
    yield served
    stop(proc)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bare(handle: str) -> str:
    """The id a handle names, without its key: what a folder name or a log would show."""
    return handle[:16]


async def refused_everywhere(client: Client, run_id: str) -> list[str]:
    """What `client` gets for someone else's run: listed nowhere, refused by a tool and as
    a resource (each refusal's text)."""
    listed = await runs_listed(client)
    uris = await resource_uris(client)
    assert bare(run_id) not in listed and not [u for u in uris if bare(run_id) in u]
    used = await error_of(client, "list_tables", {"run_id": run_id})
    with pytest.raises(MCPError) as read:
        await client.read_resource(f"rooflens://runs/{run_id}/tables")
    return [used, str(read.value)]


def workspace_text(folder: Path) -> str:
    """Every text file of the workspace (index entries, run.json, CSVs, reports)."""
    files = (folder / "rooflens_runs").rglob("*")
    return "".join(
        p.read_text(errors="replace") for p in files if p.is_file() and p.suffix != ".gz"
    )


@pytest.mark.anyio
async def test_stateless_clients_keep_their_runs_apart(served: Served, folder: Path) -> None:
    with anyio.fail_after(60):
        async with stateless_client(served.url) as alice, stateless_client(served.url) as bob:
            made = await call(alice, "load_trace", {"path": "sample.json.gz"})
            handle = made["run_id"]
            prepared = await call(alice, "prepare_category_data", {"run_id": handle})
            tables = (await alice.read_resource(f"rooflens://runs/{handle}/tables")).contents
            alice_lists = await runs_listed(alice)
            refusals = await refused_everywhere(bob, bare(handle))
            forged = await refused_everywhere(bob, f"{bare(handle)}-{FORGED_KEY}")
            again = await call(bob, "load_trace", {"path": "sample.json.gz"})
    found = HANDLE.fullmatch(handle)
    assert found is not None and found[1] == "run"
    assert prepared["run_id"] == handle and f"rooflens://runs/{handle}/manifest" in str(prepared)
    assert f'"run_id": "{handle}"' in tables[0].text
    assert alice_lists == []  # a stateless client holds its handles; nothing to list it by
    assert all("unknown run id" in text for text in refusals + forged)
    assert bare(again["run_id"]) != bare(handle) and again["reused"] is False
    assert found[2] not in workspace_text(folder)  # the key itself is written nowhere


@pytest.mark.anyio
async def test_a_session_and_a_stateless_client_keep_their_runs_apart(served: Served) -> None:
    with anyio.fail_after(60):
        async with session_client(served.url) as lee, stateless_client(served.url) as sam:
            lees = (await call(lee, "load_trace", {"path": "sample.json.gz"}))["run_id"]
            sams = (await call(sam, "load_trace", {"path": "sample.json.gz"}))["run_id"]
            lee_refused = await refused_everywhere(lee, bare(sams))
            sam_refused = await refused_everywhere(sam, lees)
            lee_lists = await runs_listed(lee)
            lee_uses = await call(lee, "list_tables", {"run_id": lees})
    assert HANDLE.fullmatch(sams) and re.fullmatch(r"run-[0-9a-f]{12}", lees)
    assert all("unknown run id" in text for text in lee_refused + sam_refused)
    assert lee_lists == [lees] and lee_uses["run_id"] == lees


@pytest.mark.anyio
async def test_a_run_made_over_stdio_is_no_http_callers(served: Served, local_run: str) -> None:
    with anyio.fail_after(60):
        async with session_client(served.url) as lee, stateless_client(served.url) as sam:
            lee_refused = await refused_everywhere(lee, local_run)
            sam_refused = await refused_everywhere(sam, local_run)
    assert all("unknown run id" in text for text in lee_refused + sam_refused)


async def job_refused(client: Client, job_id: str) -> list[str]:
    """What `client` gets for someone else's job: its overview tool and its report refused."""
    overview = await error_of(client, "get_job_overview", {"job_id": job_id})
    with pytest.raises(MCPError) as report:
        await client.read_resource(f"rooflens://jobs/{job_id}/report")
    return [overview, str(report.value)]


@pytest.mark.anyio
async def test_a_stateless_clients_job_and_its_ranks_are_its_own(served: Served) -> None:
    with anyio.fail_after(90):
        async with stateless_client(served.url) as alice, stateless_client(served.url) as bob:
            job = await call(alice, "load_job", {"paths": ["job"], "workers": 1})
            overview = await call(alice, "get_job_overview", {"job_id": job["job_id"]})
            rank_run = overview["ranks"][0]["run_id"]
            used = await call(alice, "list_tables", {"run_id": rank_run})
            refused = await job_refused(bob, bare(job["job_id"]))
            refused += await refused_everywhere(bob, bare(rank_run))
            async with session_client(served.url) as lee:
                refused += await job_refused(lee, bare(job["job_id"]))
                refused += await refused_everywhere(lee, bare(rank_run))
    job_key = HANDLE.fullmatch(job["job_id"])
    assert job_key is not None and job_key[1] == "job"
    # the ranks' runs share the job's key, in load_job's result and in the overview
    assert {HANDLE.fullmatch(r["run_id"])[2] for r in job["ranks"]} == {job_key[2]}
    assert [r["run_id"] for r in overview["ranks"]] == [r["run_id"] for r in job["ranks"]]
    assert used["run_id"] == rank_run
    assert all("unknown job id" in t or "unknown run id" in t for t in refused), refused


@pytest.mark.anyio
async def test_a_sessions_job_is_no_other_callers(served: Served) -> None:
    with anyio.fail_after(90):
        async with session_client(served.url) as lee, session_client(served.url) as kim:
            job = await call(lee, "load_job", {"paths": ["job"], "workers": 1})
            mine = await call(lee, "get_job_overview", {"job_id": job["job_id"]})
            refused = await job_refused(kim, job["job_id"])
            async with stateless_client(served.url) as sam:
                refused += await job_refused(sam, job["job_id"])
    assert re.fullmatch(r"job-[0-9a-f]{12}", job["job_id"]) and mine["job_id"] == job["job_id"]
    assert all("unknown job id" in text for text in refused), refused


def test_a_stateless_request_naming_a_session_is_not_that_session(tmp_path: Path) -> None:
    """The SDK routes a request by its protocol-version header: a 2026-07-28 request goes to
    the stateless entry, which checks no Mcp-Session-Id, so the header is nobody's there."""
    isolated = AppState.build(ServerConfig(allowed_dirs=[tmp_path], http=True))
    session = {"mcp-session-id": "5e55", "mcp-protocol-version": "2025-11-25"}
    stateless = {**session, "mcp-protocol-version": "2026-07-28"}
    legacy, spoofed = isolated.owner(session), isolated.owner(stateless)
    assert legacy != spoofed
    assert legacy.key is None and legacy.may_use(legacy.tag, None)
    assert spoofed.key is not None and not spoofed.may_use(legacy.tag, None)
    assert not isolated.owner(stateless).may_use(spoofed.tag, None)  # a new key each call
    local = AppState.build(ServerConfig(allowed_dirs=[tmp_path])).owner(stateless)
    assert not local.isolated and local.may_use(None, None)  # stdio: one client owns all


@pytest.mark.anyio
async def test_a_shared_workspace_shares_every_run_with_stateless_clients_too(
    folder: Path, local_run: str
) -> None:
    proc, shared = start(folder, "--shared-workspace")
    try:
        with anyio.fail_after(60):
            async with stateless_client(shared.url) as alice, stateless_client(shared.url) as bob:
                made = (await call(alice, "load_trace", {"path": "sample.json.gz"}))["run_id"]
                listed = await runs_listed(bob)
                used = await call(bob, "list_tables", {"run_id": local_run})
    finally:
        stop(proc)
    assert re.fullmatch(r"run-[0-9a-f]{12}", made)  # shared on purpose: no key to hold
    assert {made, local_run} <= set(listed) and used["run_id"] == local_run
