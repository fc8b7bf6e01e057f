"""Resources over MCP: run artifacts by URI, platforms, contracts, errors and completions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client, MCPError
from mcp.types import ResourceTemplateReference

from rooflens import resources
from rooflens.analyzers.findings.validation.analysis_checks import validate_report_text
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import whole_report

TEMPLATES = {
    "rooflens://runs{?step}": "application/json",
    "rooflens://runs/{run_id}/manifest": "application/json",
    "rooflens://runs/{run_id}/metrics/{category}{?offset,list}": "application/json",
    "rooflens://runs/{run_id}/ops/{category}{?offset}": "text/csv",
    "rooflens://runs/{run_id}/findings/{category}": "text/markdown",
    "rooflens://runs/{run_id}/priorities{?list,offset}": "application/json",
    "rooflens://runs/{run_id}/critical_path": "application/json",
    "rooflens://runs/{run_id}/report{?section,offset}": "text/markdown",
    "rooflens://runs/{run_id}/plot{?full}": "image/png",
    "rooflens://runs/{run_id}/tables": "application/json",
    "rooflens://runs/{run_id}/tables/{table}{?offset}": "text/csv",
    "rooflens://runs/{run_id}/workbook": resources.XLSX,
    "rooflens://platforms/{name}": "application/json",
}
STATIC = {
    "rooflens://platforms": "application/json",
    "rooflens://contract/findings": "text/markdown",
    "rooflens://contract/report-template": "text/markdown",
}


def server_for(folder: Path):
    server = build_server(ServerConfig(allowed_dirs=[folder]))
    if not any(str(t.uri_template).startswith("rooflens://") for t in server_templates(server)):
        resources.register(server)  # until app.build_server wires it
    return server


def server_templates(server) -> list:
    return list(server._resource_manager.list_templates())


async def text_of(client: Client, uri: str) -> str:
    return (await client.read_resource(uri)).contents[0].text


@pytest.mark.anyio
async def test_templates_and_static_resources_are_listed_with_mime_types(tmp_path, mode) -> None:
    async with Client(server_for(tmp_path), mode=mode) as client:
        templates = (await client.list_resource_templates()).resource_templates
        listed = {t.uri_template: t.mime_type for t in templates}
        assert {k: listed.get(k) for k in TEMPLATES} == TEMPLATES
        static = {str(r.uri): r.mime_type for r in (await client.list_resources()).resources}
        assert {k: static.get(k) for k in STATIC} == STATIC


@pytest.mark.anyio
async def test_static_references(tmp_path, mode) -> None:
    async with Client(server_for(tmp_path), mode=mode) as client:
        names = [p["name"] for p in json.loads(await text_of(client, "rooflens://platforms"))]
        assert "H100_SXM" in names
        one = json.loads(await text_of(client, "rooflens://platforms/H100_SXM"))
        assert one["name"] == "H100_SXM" and one["mem_bw_gbps"] > 0
        with pytest.raises(MCPError, match="H100_SXM"):
            await client.read_resource("rooflens://platforms/NoSuchGPU")
        contract = await text_of(client, "rooflens://contract/findings")
        assert "## Recommendations" in contract and "NO_FINDINGS" in contract
        template = await text_of(client, "rooflens://contract/report-template")
        assert template.index("## Executive Summary") < template.index("## Appendix")


@pytest.mark.anyio
@pytest.mark.slow
async def test_every_artifact_of_a_full_run_reads_back(sample, allowed, mode) -> None:
    async with Client(server_for(allowed), mode=mode) as client:
        empty = json.loads(await text_of(client, "rooflens://runs"))
        assert empty == {"runs": []}
        with pytest.raises(MCPError, match="not a run id"):
            await client.read_resource("rooflens://runs/run-9/manifest")
        result = await client.call_tool("run_full_analysis", {"path": str(sample)})
        assert not result.is_error, result.content
        run_id = result.structured_content["run_id"]
        base = f"rooflens://runs/{run_id}"

        (row,) = json.loads(await text_of(client, "rooflens://runs"))["runs"]
        assert row["run_id"] == run_id and row["trace"] == sample.name
        assert row["steps"][0] == "loaded" and "aggregated" in row["steps"]
        assert json.loads(await text_of(client, "rooflens://runs?step=aggregated"))["runs"]
        assert json.loads(await text_of(client, "rooflens://runs?step=nope"))["runs"] == []
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        assert {f"{base}/tables", f"{base}/manifest", f"{base}/report"} <= listed

        manifest = json.loads(await text_of(client, f"{base}/manifest"))
        names = [c["name"] for c in manifest["categories"]]
        assert "gemm" in names and "cpu_idle" in names
        metrics = json.loads(await text_of(client, f"{base}/metrics/GEMM"))
        assert metrics["category"] == "gemm"
        assert (await text_of(client, f"{base}/ops/gemm")).count("\n") > 1
        assert "## Recommendations" in await text_of(client, f"{base}/findings/gemm")
        assert "## Recommendations" in await text_of(client, f"{base}/findings/cpu_idle")
        ranked = json.loads((allowed / "rooflens_runs" / run_id / "priority_data.json").read_text())
        served = json.loads(await text_of(client, f"{base}/priorities"))
        assert served["replay"] == ranked["replay"] and served["priorities"]
        path = json.loads(await text_of(client, f"{base}/critical_path"))
        assert path["replay"] == ranked["replay"] and path["replay"]["replayable"]
        placed = {f["p_number"]: f for f in path["findings"]}
        assert placed  # the sample step has findings the replay places
        for item in ranked["priorities"]:  # every finding the replay placed, and only those
            assert (item["replay"] is not None) == (item["p_number"] in placed)
            if item["replay"] is not None:
                assert placed[item["p_number"]]["price"] == item["replay"]
        tables = json.loads(await text_of(client, f"{base}/tables"))
        assert {t["name"] for t in tables["tables"]} >= {"ops_summary", "unified_perf_summary"}

        report = await whole_report(client, f"{base}/report")
        run_dir = allowed / "rooflens_runs" / run_id
        assert report == (run_dir / "analysis.md").read_text()  # put back together exactly
        assert validate_report_text(report, run_dir) == []

        plot = (await client.read_resource(f"{base}/plot")).contents[0]
        assert plot.mime_type == "image/png"
        assert plot.blob  # base64 PNG
        workbook = (await client.read_resource(f"{base}/workbook")).contents[0]
        assert workbook.mime_type == resources.XLSX and workbook.blob
        assert "," in (await text_of(client, f"{base}/tables/ops_summary")).splitlines()[0]

        with pytest.raises(MCPError, match="run-000000000000"):
            await client.read_resource("rooflens://runs/run-000000000000/report")
        with pytest.raises(MCPError, match="gemm"):
            await client.read_resource(f"{base}/metrics/nope")
        with pytest.raises(MCPError, match="ops_summary"):
            await client.read_resource(f"{base}/tables/nope")

        ref = ResourceTemplateReference(uri=f"{base}/metrics/{{category}}")
        runs = await client.complete(ref, {"name": "run_id", "value": "run"})
        assert runs.completion.values == [run_id]
        cats = await client.complete(ref, {"name": "category", "value": "g"}, {"run_id": run_id})
        assert cats.completion.values == ["GEMM", "gemm"]
        pref = ResourceTemplateReference(uri="rooflens://platforms/{name}")
        plats = await client.complete(pref, {"name": "name", "value": "H1"})
        assert "H100_SXM" in plats.completion.values
        assert all(v.startswith("H1") for v in plats.completion.values)


@pytest.mark.anyio
@pytest.mark.slow
async def test_tool_results_link_resources_that_can_be_read(sample, allowed) -> None:
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        loaded = await client.call_tool("load_trace", {"path": str(sample)})
        result = await client.call_tool("run_full_analysis", {"path": str(sample)})
        links = {*loaded.structured_content["resources"], *result.structured_content["resources"]}
        assert len(links) == 6  # tables, one table, workbook, report, plot, priorities
        for uri in links:
            read = await client.read_resource(uri)
            assert read.contents, uri


@pytest.mark.anyio
async def test_prompt_arguments_complete_runs_categories_and_platforms(sample, allowed) -> None:
    from mcp.types import PromptReference

    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        run_id = (await client.call_tool("load_trace", {"path": str(sample)})).structured_content[
            "run_id"
        ]
        await client.call_tool("prepare_category_data", {"run_id": run_id})
        gemm = PromptReference(name="gemm")
        runs = await client.complete(gemm, {"name": "run_id", "value": ""})
        cats = await client.complete(gemm, {"name": "category", "value": "no"}, {"run_id": run_id})
        mine = await client.complete(gemm, {"name": "category", "value": "g"}, {"run_id": run_id})
        norm = PromptReference(name="norm")
        norms = await client.complete(norm, {"name": "category", "value": "no"}, {"run_id": run_id})
        fresh = await client.complete(gemm, {"name": "category", "value": "groupedgemm"})
        orchestrator = PromptReference(name="orchestrator")
        plats = await client.complete(orchestrator, {"name": "platform", "value": "mi3"})
    assert runs.completion.values == [run_id]
    assert cats.completion.values == []  # a prompt completes the categories it analyses
    assert mine.completion.values == ["GEMM", "gemm"]
    assert norms.completion.values == ["NORM_fwd", "norm_fwd"]
    assert fresh.completion.values == ["groupedgemm_bwd", "groupedgemm_fwd"]
    assert plats.completion.values == ["MI300X", "MI325X", "MI355X"]
