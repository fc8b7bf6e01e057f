"""The MCP tools over each transport, in both protocol eras, on a generated trace."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

from rooflens.analyzers.findings.validation.analysis_checks import validate_report_text
from rooflens.analyzers.pipeline.ledger import read_record, verify
from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.server import loading
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call, error_of, whole_report
from tests.helpers.tool_names import TOOLS
from tests.helpers.transports import keyed, plain_id


@pytest.mark.anyio
@pytest.mark.stdio
async def test_every_tool_is_listed_with_annotations_schemas_and_described_arguments(
    connect,
) -> None:
    """MCP spec: tools carry annotations and an outputSchema; every argument is described and
    the input schema admits no other (unknown arguments are refused)."""
    with anyio.fail_after(30):
        async with connect() as client:
            listed = (await client.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.annotations is not None and tool.annotations.open_world_hint is False
        assert tool.output_schema is not None, tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        assert tool.description, tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


@pytest.mark.anyio
@pytest.mark.stdio
async def test_server_reports_its_name_and_version(connect) -> None:
    async with connect() as client:
        info = client.server_info
    assert info is not None and info.name == "rooflens"
    assert info.version and info.version[0].isdigit()


@pytest.mark.anyio
@pytest.mark.stdio
async def test_step_by_step_workflow_ends_with_a_valid_report(connect, sample: Path) -> None:
    """The step-by-step workflow composes a report that validates, with the model's words."""
    with anyio.fail_after(120):
        async with connect() as client:
            loaded = await call(client, "load_trace", {"path": str(sample)})
            run_id = loaded["run_id"]
            assert re.fullmatch(r"run-[0-9a-f]{12}", plain_id(run_id)), run_id
            assert loaded["platform"] == "MI300X" and loaded["reused"] is False
            prepared = await call(client, "prepare_category_data", {"run_id": run_id})
            keys = [c["name"] for c in prepared["categories"] if c["analysable"]]
            assert {"gemm", "cpu_idle", "elementwise"} <= set(keys)
            for key in keys:
                await call(client, "run_category_analysis", {"run_id": run_id, "category": key})
            for key in keys:
                drafted = await call(client, "draft_findings", {"run_id": run_id, "category": key})
                assert drafted["status"] in {"SUCCESS", "NO_FINDINGS"}
            await call(client, "aggregate_findings", {"run_id": run_id})
            summary = "Matrix multiplies hold most of the GPU time; tune them first."
            composed = await call(
                client,
                "compose_report",
                {"run_id": run_id, "executive_summary": summary, "recommendation": "Tune GEMMs."},
            )
            checked = await call(client, "validate_report", {"run_id": run_id})
            text_back = await whole_report(client, f"rooflens://runs/{run_id}/report")
    assert composed["valid"] and checked["valid"] and checked["problems"] == []
    assert summary in text_back and "**Recommendation**: Tune GEMMs." in text_back
    folder = Path(loaded["output_dir"])
    assert folder.parent == sample.parent / "rooflens_runs"
    assert validate_report_text(text_back, folder) == []
    assert verify(folder) == []  # every artifact in the run's ledger
    assert read_record(folder).trace.name == sample.name


@pytest.mark.anyio
async def test_loading_the_same_trace_again_returns_the_same_run(
    connect, sample: Path, transport: str, mode: str
) -> None:
    """load_trace is idempotent (as annotated) unless a fresh run is asked for, or the caller
    is a stateless HTTP client (each of its calls a new owner, whose loads are never reused)."""
    async with connect() as client:
        first = await call(client, "load_trace", {"path": str(sample)})
        again = await call(client, "load_trace", {"path": str(sample)})
        other = await call(client, "load_trace", {"path": str(sample), "platform": "H100"})
        fresh = await call(client, "load_trace", {"path": str(sample), "fresh": True})
    if keyed(transport, mode):
        assert again["run_id"] != first["run_id"] and again["reused"] is False
    else:
        assert again["run_id"] == first["run_id"] and again["reused"] is True
    assert other["run_id"] != first["run_id"] and other["platform"] == "H100_SXM"
    assert fresh["run_id"] not in (first["run_id"], other["run_id"])
    assert fresh["reused"] is False


@pytest.mark.anyio
async def test_load_trace_writes_into_the_output_dir_it_is_given(connect, sample, allowed) -> None:
    async with connect() as client:
        loaded = await call(
            client, "load_trace", {"path": str(sample), "output_dir": str(allowed / "reports")}
        )
    folder = Path(loaded["output_dir"])
    # named by the plain id: a stateless caller's key is a secret, never a folder name
    assert folder == (allowed / "reports" / plain_id(loaded["run_id"])).resolve()
    assert (folder / "perf_report.xlsx").is_file() and (folder / "run.json").is_file()


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_run_survives_a_server_restart(allowed: Path, sample: Path) -> None:
    """The workspace index finds a run of an earlier server; its engine data is rebuilt."""
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        prepared = await call(client, "prepare_category_data", {"run_id": run_id})
        assert any(c["name"] == "gemm" for c in prepared["categories"])
        again = await call(client, "load_trace", {"path": str(sample)})
        assert again["run_id"] == run_id and again["reused"]


@pytest.mark.anyio
async def test_a_second_load_of_an_unchanged_trace_neither_reads_nor_hashes_it(
    connect, sample: Path, monkeypatch: pytest.MonkeyPatch, transport: str, mode: str
) -> None:
    """The run held in memory is found by path, size and mtime; a touched file is hashed. A
    stateless HTTP caller's loads are never reused: its second load reads the trace again."""

    def refuse(*args, **kwargs):
        raise AssertionError("the trace was read again")

    if keyed(transport, mode):
        async with connect() as client:
            await call(client, "load_trace", {"path": str(sample)})
            with monkeypatch.context() as patched:
                patched.setattr(loading, "read_trace", refuse)
                patched.setattr(loading.TraceIdentity, "of", refuse)
                read_again = await error_of(client, "load_trace", {"path": str(sample)})
        assert read_again  # refused reads failed the load: it read, it did not reuse
        return

    async with connect() as client:
        first = await call(client, "load_trace", {"path": str(sample)})
        with monkeypatch.context() as patched:
            patched.setattr(loading, "read_trace", refuse)
            patched.setattr(loading.TraceIdentity, "of", refuse)
            again = await call(client, "load_trace", {"path": str(sample)})
        os.utime(sample, ns=(sample.stat().st_atime_ns, sample.stat().st_mtime_ns + 10**9))
        monkeypatch.setattr(loading, "read_trace", refuse)
        touched = await call(client, "load_trace", {"path": str(sample)})  # same bytes
    assert again["run_id"] == touched["run_id"] == first["run_id"]
    assert again["reused"] and touched["reused"]


@pytest.mark.anyio
@pytest.mark.slow
async def test_a_restarted_server_reports_the_prose_an_earlier_one_took(
    allowed: Path, sample: Path
) -> None:
    """Steps of one run split across two servers: the second recomputes what code wrote and
    reads back only what the model wrote (its findings prose)."""
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        await call(client, "prepare_category_data", {"run_id": run_id})
        await call(client, "run_category_analysis", {"run_id": run_id, "category": "gemm"})
        items = [{"rank": 1, "title": "Retune the square GEMMs"}]
        await call(
            client, "submit_findings", {"run_id": run_id, "category": "gemm", "items": items}
        )
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        early = await error_of(client, "compose_report", {"run_id": run_id})
        await call(client, "aggregate_findings", {"run_id": run_id})
        composed = await call(client, "compose_report", {"run_id": run_id})
        report = await whole_report(client, f"rooflens://runs/{run_id}/report")
    assert f"aggregate_findings(run_id={run_id!r})" in early
    assert composed["valid"], composed["problems"]
    assert "Retune the square GEMMs" in report


@pytest.mark.anyio
@pytest.mark.slow
async def test_run_ids_do_not_repeat_across_servers(allowed: Path) -> None:
    """Two servers on one workspace (or a restart) never hand out the same id."""
    ids = set()
    for seed in range(3):
        trace = write_sample_trace(allowed / f"t{seed}.json.gz", seed=seed)
        async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
            ids.add((await call(client, "load_trace", {"path": str(trace)}))["run_id"])
    assert len(ids) == 3
    index = allowed / "rooflens_runs" / ".index"
    assert sorted(p.stem for p in index.glob("run-*.json")) == sorted(ids)


@pytest.mark.anyio
async def test_unknown_run_id_says_how_to_start_one(connect) -> None:
    async with connect() as client:
        bad = await error_of(client, "prepare_category_data", {"run_id": "run-9"})
        unknown = await error_of(client, "prepare_category_data", {"run_id": "run-000000000000"})
    assert "is not a run id" in bad and "load_trace" in bad
    assert "unknown run id 'run-000000000000'" in unknown and "load_trace" in unknown


@pytest.mark.anyio
async def test_steps_asked_too_early_name_the_tool_to_call_first(connect, sample) -> None:
    async with connect() as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        early = await error_of(
            client, "run_category_analysis", {"run_id": run_id, "category": "gemm"}
        )
        await call(client, "prepare_category_data", {"run_id": run_id})
        undrafted = await error_of(client, "draft_findings", {"run_id": run_id, "category": "gemm"})
        unaggregated = await error_of(client, "compose_report", {"run_id": run_id})
    assert "prepare_category_data(run_id=" in early
    assert "run_category_analysis(run_id=" in undrafted and "'gemm'" in undrafted
    assert "aggregate_findings(run_id=" in unaggregated


@pytest.mark.anyio
async def test_submit_findings_takes_status_note_and_refuses_what_does_not_fit(
    connect, sample
) -> None:
    """Prose goes over the draft's numbers; an unknown rank, dropping drafted items, and
    markdown structure in prose are refused with the reason."""
    async with connect() as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        await call(client, "prepare_category_data", {"run_id": run_id})
        for key in ("gemm", "sdpa_fwd"):
            await call(client, "run_category_analysis", {"run_id": run_id, "category": key})
        base = {"run_id": run_id, "category": "GEMM"}
        rank = await error_of(client, "submit_findings", {**base, "items": [{"rank": 99}]})
        drop = await error_of(client, "submit_findings", {**base, "status": "nothing_to_report"})
        smuggle = await error_of(
            client, "submit_findings", {**base, "items": [{"rank": 1, "insight": "x\n# H"}]}
        )
        done = await call(
            client,
            "submit_findings",
            {**base, "note": "One group of GEMMs.", "items": [{"rank": 1, "title": "Tune GEMMs"}]},
        )
        quiet = await call(
            client,
            "submit_findings",
            {
                "run_id": run_id,
                "category": "sdpa_fwd",
                "status": "nothing_to_report",
                "note": "Attention is fast here.",
            },
        )
        gemm = await client.read_resource(f"rooflens://runs/{run_id}/findings/gemm")
        sdpa = await client.read_resource(f"rooflens://runs/{run_id}/findings/SDPA_fwd")
    assert "[99]" in rank and "ranks are [1]" in rank
    assert "cannot be dropped" in drop
    assert "plain prose" in smuggle
    assert done["status"] == "findings" and quiet["status"] == "nothing_to_report"
    assert "Tune GEMMs" in gemm.contents[0].text and "One group of GEMMs." in gemm.contents[0].text
    assert (
        "NO_FINDINGS" in sdpa.contents[0].text
        and "Attention is fast here." in sdpa.contents[0].text
    )


@pytest.mark.anyio
@pytest.mark.slow
async def test_run_full_analysis_reports_progress_and_a_valid_report(connect, sample) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect() as client:
        result = await client.call_tool(
            "run_full_analysis", {"path": str(sample)}, progress_callback=on_progress
        )
        assert not result.is_error, result.content
        run_id = result.structured_content["run_id"]
        report = await client.read_resource(f"rooflens://runs/{run_id}/report")
    assert result.structured_content["report_valid"] is True
    ranked = result.structured_content["priorities"]
    assert [row["p"] for row in ranked] == list(range(1, len(ranked) + 1))
    assert {"gemm", "cpu_idle"} <= {row["category"] for row in ranked}  # compute and system
    mids = [row["saving_ms"][1] for row in ranked if row["estimate_method"] == "quantified"]
    assert mids == sorted(mids, reverse=True)
    # one tick per step of the declared pipeline: load, prepare, the sample's seven analyses
    # (system ones first), ranking, the report; the total is known only at the end
    analyses = ["cpu_idle", "multi_kernel", "kernel_fusion", "gemm", "elementwise"]
    analyses += ["norm_fwd", "sdpa_fwd"]
    assert [p for p, _, _ in seen] == list(range(12))
    assert [m for _, _, m in seen][2:9] == [f"analysing {k}" for k in analyses]
    assert [t for _, t, _ in seen] == [None] * 11 + [11]
    assert "## Executive Summary" in report.contents[0].text


@pytest.mark.anyio
@pytest.mark.stdio
async def test_result_text_is_a_compact_copy_of_the_structured_content(connect, sample) -> None:
    async with connect() as client:
        result = await client.call_tool("load_trace", {"path": str(sample)})
    (content,) = result.content
    assert json.loads(content.text) == result.structured_content
    assert "\n" not in content.text and ", " not in content.text[:40]


@pytest.mark.anyio
async def test_analysts_working_in_parallel_leave_a_consistent_run(connect, sample) -> None:
    """The orchestrator starts analysts in parallel: every step is recorded and every
    artifact is in the run's ledger."""
    async with connect() as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        prepared = await call(client, "prepare_category_data", {"run_id": run_id})
        keys = [c["name"] for c in prepared["categories"] if c["analysable"]]

        async def analyst(key: str) -> None:
            args = {"run_id": run_id, "category": key}
            await call(client, "run_category_analysis", args)
            await call(client, "draft_findings", args)

        async with anyio.create_task_group() as group:
            for key in keys:
                group.start_soon(analyst, key)
        await call(client, "aggregate_findings", {"run_id": run_id})
        checked = await call(client, "validate_run", {"run_id": run_id})
    artifacts = next(c for c in checked["checks"] if c["name"] == "artifacts")
    assert artifacts == {"name": "artifacts", "status": "PASS", "messages": []}
    folder = Path(prepared["resources"][0].split("/")[-2])  # the run id
    assert str(folder) == run_id
