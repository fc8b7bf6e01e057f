"""MCP `load_job`: a generated job on an embedded Dask cluster, its ranks usable as runs, its
tables as resources, its inputs checked against the allowed directories (docs/multirank.md)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from rooflens.analyzers import layout
from rooflens.analyzers.job.job_folder import verify_job
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from tests.helpers.mcp_client import call, error_of
from tests.helpers.transports import plain_id

pytestmark = pytest.mark.slow  # every job starts a Dask cluster

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
    # a folder's entry whose link leads outside is no entry of it (docs/security.md)
    assert "linked: matches no trace file (.json or .json.gz) inside the allowed" in linked
    assert "outside/rank0" not in linked
    assert "1 rank(s) given more than once (rank 1: copy_rank1.json, rank1.pt" in twice
    assert "load_job has no argument 'ranks'" in unknown


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_a_jobs_overview_is_read_again_by_id_small_and_paged(connect, allowed) -> None:
    """After load_job, the straggler and findings come back by job id (no job report), the
    ranks a page at a time; a rank's run id is not a job id and a job id is not a run id."""
    write_job(allowed / "job", PLAN)
    with anyio.fail_after(180):
        async with connect() as client:
            loaded = await call(client, "load_job", {"paths": ["job"], "workers": 1})
            job = loaded["job_id"]
            first = await call(client, "get_job_overview", {"job_id": job, "limit": 3})
            rest = await call(client, "get_job_overview", {"job_id": job, "offset": 3})
            rank_run = loaded["ranks"][2]["run_id"]
            as_job = await error_of(client, "get_job_overview", {"job_id": rank_run})
            as_run = await error_of(client, "prepare_category_data", {"run_id": job})
            unknown = await error_of(client, "get_job_overview", {"job_id": "job-000000000000"})
            record = json.loads(
                (await client.read_resource(f"rooflens://jobs/{job}")).contents[0].text
            )
    view = first["overview"]
    assert view == loaded["overview"]  # the overview load_job returned, read back from disk
    assert view["straggler"]["rank"] == 2 and view["straggler"]["times_last"] == 4
    assert view["findings"][0]["p_number"] == 1 and "Rank 2" in view["findings"][0]["title"]
    assert [r["rank"] for r in first["ranks"]] == [0, 1, 2] and first["next_offset"] == 3
    assert [r["rank"] for r in rest["ranks"]] == [3] and rest["has_more"] is False
    assert first["ranks"][2]["run_id"] == rank_run and first["total_ranks"] == 4
    assert (first["ranks_done"], first["ranks_failed"]) == (4, 0)
    assert f"{rank_run} is a run id (one rank's run" in as_job
    assert f"{job} is a job id; the run tools take one rank's run id" in as_run
    assert "unknown job id 'job-000000000000'; call load_job" in unknown
    # the record resource leaves out the ledger and the traces' hashes
    assert "artifacts" not in record and record["files_in_ledger"] > 4 * 7
    # the record names the ranks' runs by plain id, even to a stateless caller (whose handles
    # carry its key): the same runs, in the same order
    recorded = [r["run_id"] for r in record["ranks"]]
    assert recorded == [plain_id(r["run_id"]) for r in loaded["ranks"]]
    assert all("trace" not in r for r in record["ranks"])
    assert verify_job(allowed / "rooflens_runs" / plain_id(job, "job")) == []
    assert (allowed / "rooflens_runs" / plain_id(job, "job") / layout.JOB_OVERVIEW).is_file()


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_a_large_jobs_record_and_tables_come_in_pages(connect, allowed) -> None:
    """job.json grew by a ledger line per file and a hash per trace: 13 kB for the 8-rank
    DLRM job, 17 kB for 64 generated ranks without runs. Now the ledger is left out and the
    ranks are paged within the result limit."""
    write_job(allowed / "job", JobPlan(ranks=16, steps=1, collectives=2, slow_rank=3, slow_us=80))
    limit = 4096
    with anyio.fail_after(180):
        async with connect(max_result_bytes=limit) as client:
            loaded = await call(client, "load_job", {"paths": ["job"], "until": "none"})
            base = f"rooflens://jobs/{loaded['job_id']}"
            pages, nxt = [], base
            while nxt:
                pages.append((await client.read_resource(nxt)).contents[0].text)
                nxt = json.loads(pages[-1])["ranks_page"]["next"]
            ranks = (await client.read_resource(f"{base}/tables/ranks")).contents[0].text
            report, nxt = [], f"{base}/report"
            while nxt:
                report.append((await client.read_resource(nxt)).contents[0].text)
                found = re.search(r"next page: (\S+)\)\*\n$", report[-1])
                nxt = found.group(1) if found else None
    folder = allowed / "rooflens_runs" / plain_id(loaded["job_id"], "job")
    on_disk = json.loads((folder / "job.json").read_text())
    records = [json.loads(p) for p in pages]
    assert len(pages) > 1 and all(len(p.encode()) <= limit for p in pages)
    assert [r["rank"] for p in records for r in p["ranks"]] == list(range(16))
    assert [r["trace_path"] for p in records for r in p["ranks"]] == [
        r["trace_path"] for r in on_disk["ranks"]
    ]
    assert records[0]["ranks_page"]["total"] == 16 and records[0]["world_size"] == 16
    assert records[0]["files_in_ledger"] == len(on_disk["artifacts"])
    # the report in pages of whole lines, each ending with the line naming the next
    whole = (folder / "job_analysis.md").read_text()
    assert len(report) > 1 and all(len(p.encode()) <= limit for p in report)
    assert (
        "".join(re.sub(r"\n\*\(lines \d+-\d+ of \d+; next page: \S+\)\*\n$", "", p) for p in report)
        == whole
    )
    # a table that fits is whole, with no page note
    assert [r["rank"] for r in csv.DictReader(io.StringIO(ranks))] == [str(r) for r in range(16)]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_a_job_of_many_failed_ranks_stays_within_the_result_limit(connect, allowed) -> None:
    """Every failed rank's path and reason went into load_job's overview, and up to 64 rank
    rows whether or not they fit: a job whose ranks mostly fail made an unbounded result."""
    write_job(allowed / "job", JobPlan(ranks=12, steps=1, collectives=1))
    for r in range(2, 12):
        (allowed / "job" / f"rank{r}.pt.trace.json.gz").write_bytes(b"not a trace " * 200)
    limit = 8192
    with anyio.fail_after(180):
        async with connect(max_result_bytes=limit) as client:
            result = await client.call_tool("load_job", {"paths": ["job"], "until": "none"})
            assert not result.is_error, result.content
            loaded = result.structured_content
            again = await call(client, "get_job_overview", {"job_id": loaded["job_id"]})
    assert (loaded["ranks_done"], loaded["ranks_failed"]) == (2, 10)
    for view in (loaded["overview"], again["overview"]):
        assert [f["rank"] for f in view["failures"]] == list(range(2, 7))  # the first 5
        assert view["failures"][0] == {
            "rank": 2,
            "path": "rank2.pt.trace.json.gz",
            "reason": "unreadable trace: rank2.pt.trace.json.gz: is named .json.gz but is not "
            "gzip-compressed. Rename it to .json if it holds plain JSON",
        }
    shown = len(loaded["ranks"])
    assert 2 < shown < 12 and loaded["next_offset"] == shown
    assert [r["rank"] for r in loaded["ranks"]] == list(range(shown))
    assert loaded["ranks"][2]["reason"] == (
        "unreadable trace: rank2.pt.trace.json.gz: is named .json.gz but is not "
        "gzip-compressed. Rename it to .json if it holds plain JSON"
    )
    assert len(result.content[0].text.encode()) <= limit // 2
