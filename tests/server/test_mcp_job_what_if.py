"""MCP `job_what_if`: a loaded job's ranks replayed together, on a generated lockstep job
whose rank 1 computes 1.5x as long before every all-reduce
(analyzers/synthetic/what_if_job.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rooflens.analyzers.synthetic.what_if_job import LockstepPlan, write_lockstep_job
from tests.helpers.mcp_client import call, error_of

pytestmark = pytest.mark.slow  # load_job starts a Dask cluster


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])  # one protocol era: each load starts a cluster
async def test_the_straggler_fix_is_priced_for_the_whole_job(connect, allowed: Path) -> None:
    (allowed / "job").mkdir()
    write_lockstep_job(
        allowed / "job", LockstepPlan(ranks=2, steps=4, slow_rank=1, slow_factor=1.5)
    )
    with anyio.fail_after(180):
        async with connect() as client:
            job = await call(client, "load_job", {"paths": ["job"], "workers": 1})
            got = await call(
                client,
                "job_what_if",
                {
                    "job_id": job["job_id"],
                    "changes": ["rank1@gpu:xmma=0.666667", "rank0@gpu:xmma=0.5"],
                },
            )
            bad = await error_of(
                client, "job_what_if", {"job_id": job["job_id"], "changes": ["rank7@gpu:x=0.5"]}
            )
            bare = await call(client, "load_job", {"paths": ["job"], "workers": 1, "until": "none"})
            none = await error_of(client, "job_what_if", {"job_id": bare["job_id"]})
    w = got["what_if"]
    assert got["job_id"] == job["job_id"] and [r["rank"] for r in w["ranks"]] == [0, 1]
    assert all(r["replay_error_pct"] < 0.01 for r in w["ranks"])
    fixed, waiting = w["changes"]
    assert fixed["saving_ms"] == pytest.approx(2.0, abs=0.01)
    assert waiting["saving_ms"] == pytest.approx(0.0, abs=0.005)
    assert "no trace of rank 7" in bad
    assert "fewer than two ranks with a run" in none
