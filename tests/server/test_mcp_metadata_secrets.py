"""Trace metadata can hold secrets (environment variables in the profiler's metadata, host
names, a rendezvous address): a comparative run and a job read such traces, and nothing of
it comes back in any tool result or resource a model reads."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import anyio
import pytest

from rooflens.analyzers.synthetic.job import JobPlan, write_job
from tests.helpers.compare_pairs import planted_pair
from tests.helpers.mcp_client import call

SECRET = "hunter2-do-not-echo"
HOST = "gpu-node-secret-17.corp"


def plant(path: Path) -> None:
    """The trace at `path` with secrets in its top-level metadata and distributedInfo."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    doc["metadata"] = json.dumps({"env": {"HF_TOKEN": SECRET}, "hostname": HOST})
    doc["hostname"] = HOST
    info = doc.setdefault("distributedInfo", {})
    info.update({"master_addr": HOST, "pg_config": {"token": SECRET}})
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))


def clean(text: str) -> bool:
    return SECRET not in text and HOST not in text


async def read(client, uri: str) -> str:
    contents = (await client.read_resource(uri)).contents[0]
    return getattr(contents, "text", None) or ""


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
@pytest.mark.slow
async def test_a_comparative_run_echoes_no_metadata_of_either_trace(connect, allowed) -> None:
    one, two, _ = planted_pair(allowed)
    plant(one)
    plant(two)
    args = {"path": str(one), "compare_with": str(two), "platform": "MI300X", "platform2": "H100"}
    texts = []
    with anyio.fail_after(180):
        async with connect() as client:
            full = await call(client, "run_full_analysis", args)
            run = full["run_id"]
            texts.append(json.dumps(await call(client, "load_trace", args)))
            texts.append(json.dumps(full))
            texts.append(json.dumps(await call(client, "inspect_trace", {"path": str(two)})))
            for trace in (1, 2):
                page = await call(client, "query_operations", {"run_id": run, "trace": trace})
                texts.append(json.dumps(page))
            listed = await call(client, "list_tables", {"run_id": run})
            texts.append(json.dumps(listed))
            uris = [t["resource"] for t in listed["tables"] if t["resource"]]
            uris += [f"rooflens://runs/{run}/{leaf}" for leaf in ("report", "manifest")]
            uris += [f"rooflens://runs/{run}/trace2/utilization", "rooflens://runs"]
            for uri in uris:
                texts.append(await read(client, uri))
    assert full["report_valid"] is True and len(uris) > 10
    assert all(clean(t) for t in texts)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
@pytest.mark.slow
async def test_a_job_echoes_no_metadata_of_its_ranks(connect, allowed) -> None:
    paths = write_job(
        allowed / "job", JobPlan(ranks=2, steps=1, collectives=2, slow_rank=1, slow_us=100.0)
    )
    for path in paths:
        plant(path)
    texts = []
    with anyio.fail_after(180):
        async with connect() as client:
            loaded = await call(client, "load_job", {"paths": ["job"], "workers": 1})
            texts.append(json.dumps(loaded))
            job = loaded["job_id"]
            overview = await call(client, "get_job_overview", {"job_id": job})
            texts.append(json.dumps(overview))
            for uri in loaded["resources"]:
                if not uri.endswith("/plot"):
                    texts.append(await read(client, uri))
            rank_run = loaded["ranks"][1]["run_id"]
            texts.append(json.dumps(await call(client, "query_operations", {"run_id": rank_run})))
    assert overview["overview"]["straggler"]["rank"] == 1 and len(texts) == 8
    assert all(clean(t) for t in texts)
