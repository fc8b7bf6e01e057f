"""A scripted client that follows the orchestrator's job section and the job-analysis prompt
literally, on a generated job with a planted straggler: it loads the ranks with load_job,
reads every resource the job prompt names, finds the straggler where the prompt says to look
and drills into that rank's own run with the run tools (and, in comparative scope, sets its
trace against the longest waiter's). The rank it finds is the planted one.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import anyio
import pytest

from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.server.state import DEFAULT_MAX_RESULT_BYTES
from tests.helpers.recorder import Recorder

pytestmark = pytest.mark.slow  # the job starts a Dask cluster

# rank 1 computes 250 µs longer before each of the 2 × 2 collectives: every other rank waits
# about 250 µs at each, 1.0 ms in all, and rank 1 holds them 0.5 ms per step
PLAN = JobPlan(ranks=4, steps=2, collectives=2, slow_rank=1, slow_us=250.0)
JOB_URI = re.compile(r"`(rooflens://jobs/[^`]+)`")


def table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


async def load(model: Recorder) -> dict:
    """The orchestrator's job section, step 1: several rank traces go to load_job."""
    text = await model.prompt("orchestrator", trace="job/")
    section = text.split("## A distributed job", 1)[1]
    assert "Call `load_job` with `paths`" in section and "`job-analysis`" in section
    return await model.tool("load_job", paths=["job/rank*.json.gz"], workers=1)


async def read_the_job(model: Recorder, job_id: str) -> dict[str, str]:
    """The job prompt's "Read the job" steps: every job resource it names, in its order."""
    text = await model.prompt("job-analysis", job_id=job_id)
    uris = list(dict.fromkeys(JOB_URI.findall(text)))
    assert uris[:2] == [
        f"rooflens://jobs/{job_id}/report",
        f"rooflens://jobs/{job_id}/tables/straggler_summary",
    ]
    return {uri.removeprefix(f"rooflens://jobs/{job_id}"): await model.read(uri) for uri in uris}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])  # one protocol era: each load starts a cluster
async def test_the_job_prompt_followed_literally_finds_the_planted_straggler(
    connect, allowed: Path
) -> None:
    write_job(allowed / "job", PLAN)
    with anyio.fail_after(240):
        async with connect() as client:
            model = Recorder(client)
            loaded = await load(model)
            job = await model.tool("get_job_overview", job_id=loaded["job_id"])
            read = await read_the_job(model, loaded["job_id"])
            # the straggler arrives last most often and waits least; the last row waited longest
            rows = table(read["/tables/straggler_summary"])
            straggler = max(rows, key=lambda r: int(r["times_arrived_last"]))
            waiter = rows[-1]
            runs = {r["rank"]: r["run_id"] for r in job["ranks"]}
            # drill into the straggler's run: its categories, then the operation the report names
            run_id = runs[int(straggler["rank"])]
            prepared = await model.tool("prepare_category_data", run_id=run_id)
            ops = {}
            for rank in (int(straggler["rank"]), int(waiter["rank"])):
                page = await model.tool(
                    "query_operations", run_id=runs[rank], name_contains="aten::mm"
                )
                ops[rank] = page["rows"][0]["Kernel Time (µs)_sum"]
            # comparative scope: the straggler's trace against the rank that waited longest
            text = await model.prompt(
                "job-analysis", job_id=loaded["job_id"], comparison_scope="comparative"
            )
            assert "Call `load_trace`" in text and "`compare_with`" in text
            record = json.loads(await model.read(f"rooflens://jobs/{loaded['job_id']}"))
            paths = {r["rank"]: r["trace_path"] for r in record["ranks"]}
            pair = await model.tool(
                "load_trace",
                path=paths[int(straggler["rank"])],
                compare_with=paths[int(waiter["rank"])],
            )
    assert int(straggler["rank"]) == PLAN.slow_rank
    assert straggler["times_arrived_last"] == straggler["num_collectives"] == "4"
    assert float(straggler["total_wait_time_us"]) < 10  # it waits for nobody
    assert int(waiter["rank"]) != PLAN.slow_rank
    assert float(waiter["total_wait_time_us"]) == pytest.approx(4 * PLAN.slow_us, rel=0.1)
    report = read["/report"]
    assert f"**Rank {PLAN.slow_rank} arrives last** at 4 of 4 collectives" in report
    assert "**Why**: more GPU compute, most of it in `aten::mm`" in report
    view = job["overview"]["straggler"]  # the overview the prompt reads first agrees
    assert view["rank"] == PLAN.slow_rank and job["overview"] == loaded["overview"]
    assert view["held_others_per_step_ms"] == pytest.approx(2 * PLAN.slow_us / 1e3, rel=0.1)
    assert "gemm" in {c["name"] for c in prepared["categories"]}
    # its aten::mm kernels ran the planted 4 × 250 µs longer than the longest waiter's
    slower = ops[PLAN.slow_rank] - ops[int(waiter["rank"])]
    assert slower == pytest.approx(4 * PLAN.slow_us, rel=0.1)
    # and the comparison of the two ranks' traces names the same operation first
    assert pair["comparison"]["what_changed"].startswith("`aten::mm` is faster in trace 2")
    assert model.largest <= DEFAULT_MAX_RESULT_BYTES
    assert model.tool_calls == [
        "load_job", "get_job_overview", "prepare_category_data", "query_operations",
        "query_operations", "load_trace",
    ]  # fmt: skip
