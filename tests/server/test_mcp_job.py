"""MCP `load_job`: a generated job on an embedded Dask cluster, its ranks usable as runs, its
tables as resources, its inputs checked against the allowed directories (docs/multirank.md)."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from rooflens.analyzers.trace.synthetic_job import JobPlan, write_job
from tests.helpers.mcp_client import call, error_of

PLAN = JobPlan(ranks=4, steps=2, collectives=2, slow_rank=2, slow_us=300.0)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])  # one protocol era: each call starts a cluster
async def test_a_job_loads_its_ranks_as_runs_and_its_tables_as_resources(
    connect, allowed: Path, tmp_path: Path
) -> None:
    write_job(allowed / "job", PLAN)
    (allowed / "job" / "rank3.pt.trace.json.gz").write_bytes(b"not a trace")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(180):
        async with connect() as client:
            result = await client.call_tool(
                "load_job",
                {"paths": ["job/rank*.json.gz"], "workers": 1},
                progress_callback=on_progress,
            )
            assert not result.is_error, result.content
            job = result.structured_content
            run_id = job["ranks"][0]["run_id"]
            prepared = await call(client, "prepare_category_data", {"run_id": run_id})
            table = await client.read_resource(
                f"rooflens://jobs/{job['job_id']}/tables/straggler_summary"
            )
            record = await client.read_resource(f"rooflens://jobs/{job['job_id']}")
            report = await client.read_resource(f"rooflens://jobs/{job['job_id']}/report")
            with pytest.raises(MCPError, match="unknown job id 'job-000000000000'; call load_job"):
                await client.read_resource("rooflens://jobs/job-000000000000")
    view = job["overview"]
    assert (job["ranks_done"], job["ranks_failed"], view["world_size"]) == (3, 1, 4)
    assert view["straggler"]["rank"] == 2 and view["straggler"]["times_last"] == 4
    assert view["longest_waiter"]["total_wait_ms"] == pytest.approx(4 * 0.3, rel=0.1)
    assert [f["rank"] for f in view["failures"]] == [3]
    assert [r["status"] for r in job["ranks"]] == ["done", "done", "done", "failed"]
    assert job["ranks"][3]["reason"].startswith("unreadable trace: ")
    assert job["ranks"][3]["run_id"] is None
    assert "gemm" in {c["name"] for c in prepared["categories"]}
    assert sorted(p for p, _, _ in seen) == [1, 2, 3, 4] and {t for _, t, _ in seen} == {4}
    rows = list(csv.DictReader(io.StringIO(table.contents[0].text)))
    assert rows[0]["rank"] == "2" and rows[0]["times_arrived_last"] == "4"
    assert '"status": "failed"' in record.contents[0].text
    assert "**Rank 2 arrives last** at 4 of 4 collectives" in report.contents[0].text


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_job_inputs_outside_or_mixed_up_are_refused(connect, allowed, tmp_path) -> None:
    write_job(tmp_path / "outside", JobPlan(ranks=2, steps=1, collectives=1))
    write_job(allowed / "job", JobPlan(ranks=2, steps=1, collectives=1))
    shutil.copy(allowed / "job" / "rank1.pt.trace.json.gz", allowed / "job" / "copy_rank1.json")
    (allowed / "linked").mkdir()
    (allowed / "linked" / "rank0.json.gz").symlink_to(tmp_path / "outside/rank0.pt.trace.json.gz")
    async with connect() as client:
        outside = await error_of(client, "load_job", {"paths": [str(tmp_path / "outside/*")]})
        linked = await error_of(client, "load_job", {"paths": ["linked"]})
        twice = await error_of(client, "load_job", {"paths": ["job"]})
        unknown = await error_of(client, "load_job", {"paths": ["job"], "ranks": 2})
    assert "is outside the allowed directories" in outside
    assert "is outside the allowed directories" in linked and "outside/rank0" not in linked
    assert "1 rank(s) given more than once (rank 1: copy_rank1.json, rank1.pt" in twice
    assert "load_job has no argument 'ranks'" in unknown
