"""The tools on a GPU the catalogue does not know, without a platform: load_trace,
prepare_category_data and run_full_analysis all work and carry the one `no_platform` warning
saying how to pass a platform (docs/analysis.md#without-a-platform)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call, whole_report
from tests.helpers.sample_traces import P100, renamed_gpu, write_variant
from tests.helpers.transports import keyed

GPU = "Tesla P100-SXM2-16GB"


@pytest.mark.anyio
@pytest.mark.slow
async def test_load_prepare_and_full_analysis_work_and_warn(
    connect, allowed: Path, transport: str, mode: str
) -> None:
    trace = write_variant(allowed / "p100.json.gz", renamed_gpu(GPU, **P100))
    async with connect() as client:
        loaded = await call(client, "load_trace", {"path": str(trace)})
        run_id = loaded["run_id"]
        prepared = await call(client, "prepare_category_data", {"run_id": run_id})
        full = await call(client, "run_full_analysis", {"path": str(trace)})
        report = await whole_report(client, f"rooflens://runs/{full['run_id']}/report")
    assert loaded["platform"] is None and loaded["roofline_coverage_percent"] is None
    first = loaded["health_warnings"][0]
    assert first["code"] == "no_platform" and first["severity"] == "warning"
    assert [w["code"] for w in loaded["health_warnings"]].count("no_platform") == 1
    message = first["message"]
    assert f"The GPU ({GPU})" in message
    assert "`platform` or `platform_file`" in message and "mem_bw_gbps" in message
    assert prepared["warnings"] == [first]
    names = {c["name"] for c in prepared["categories"]}
    assert {"gemm", "elementwise", "norm_fwd", "sdpa_fwd", "cpu_idle"} <= names
    if keyed(transport, mode):  # each stateless call is a new owner: a new run
        assert full["run_id"] != run_id and full["reused"] is False
    else:
        assert (full["run_id"], full["reused"]) == (run_id, True)
    assert full["platform"] is None
    assert full["warnings"] == [first] and full["failed"] == []
    assert full["report_valid"] is True
    compute = [row for row in full["priorities"] if row["kind"] == "compute"]
    assert compute and {row["estimate_method"] for row in compute} == {"unquantified"}
    assert f"`no_platform`: {message}" in report


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_run_without_a_platform_survives_a_server_restart(allowed: Path) -> None:
    trace = write_variant(allowed / "p100.json.gz", renamed_gpu(GPU, **P100))
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        run_id = (await call(client, "load_trace", {"path": str(trace)}))["run_id"]
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        prepared = await call(client, "prepare_category_data", {"run_id": run_id})
        full = await call(client, "run_full_analysis", {"path": str(trace)})
    assert [w["code"] for w in prepared["warnings"]] == ["no_platform"]
    assert (full["run_id"], full["reused"], full["platform"]) == (run_id, True, None)
    assert full["report_valid"] is True
