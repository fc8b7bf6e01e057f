"""The MCP tools over an in-memory client, in both protocol eras."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest
from mcp import Client

from rooflens.analyzers.findings.validate_report import validate_report_text
from rooflens.server.app import ServerConfig, build_server
from tests.golden.conftest import shared_dir

TRACE = Path("traces/h100/gaunernst_bert-small-uncased__1016001.json.gz")
TOOLS = {
    "list_platforms",
    "inspect_trace",
    "load_trace",
    "prepare_category_data",
    "run_category_analysis",
    "draft_findings",
    "submit_findings",
    "validate_findings",
    "aggregate_findings",
    "validate_run",
    "compose_report",
    "validate_report",
    "query_operations",
    "run_full_analysis",
    "get_model_identification_data",
    "submit_model_info",
    "render_performance_plot",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["auto", "legacy"])
def connect(request, tmp_path: Path):
    server = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    return lambda: Client(server, mode=request.param)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    shared = shared_dir()
    if shared is None or not (shared / TRACE).is_file():
        if os.environ.get("CI"):
            pytest.fail("the shared traces are missing")
        pytest.skip("the shared traces are not available")
    return Path(shutil.copy(shared / TRACE, tmp_path / TRACE.name))


def text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(client, name: str, args: dict) -> dict:
    result = await client.call_tool(name, args)
    assert not result.is_error, text(result)
    return result.structured_content


@pytest.mark.anyio
async def test_every_tool_is_listed_with_annotations_and_output_schema(connect) -> None:
    """MCP spec: tools carry annotations and an outputSchema."""
    with anyio.fail_after(30):
        async with connect() as client:
            listed = (await client.list_tools()).tools
    assert {t.name for t in listed} == TOOLS
    for tool in listed:
        assert tool.annotations is not None and tool.annotations.open_world_hint is False
        assert tool.output_schema is not None, tool.name


@pytest.mark.anyio
async def test_full_workflow_ends_with_a_valid_report(connect, trace: Path) -> None:
    """The step-by-step workflow on a real trace composes a report that validates."""
    with anyio.fail_after(300):
        async with connect() as client:
            loaded = await call(client, "load_trace", {"path": str(trace)})
            run_id = loaded["run_id"]
            assert run_id == "run-1" and loaded["platform"]
            prepared = await call(client, "prepare_category_data", {"run_id": run_id})
            keys = [c["name"] for c in prepared["categories"] if c["analysable"]]
            assert keys
            for key in keys:
                args = {"run_id": run_id, "category": key}
                await call(client, "run_category_analysis", args)
            for key in keys:
                args = {"run_id": run_id, "category": key}
                assert (await call(client, "draft_findings", args))["text"]
            await call(client, "aggregate_findings", {"run_id": run_id})
            page = await call(client, "query_operations", {"run_id": run_id, "limit": 3})
            assert len(page["rows"]) <= 3
            composed = await call(client, "compose_report", {"run_id": run_id})
            assert Path(composed["report"]).is_file()
            checked = await call(client, "validate_report", {"run_id": run_id})
            report = await client.read_resource(f"rooflens://runs/{run_id}/report")
    assert checked["problems"] == []
    text_back = report.contents[0].text
    assert text_back == Path(composed["report"]).read_text()
    assert validate_report_text(text_back, Path(composed["report"]).parent) == []


async def error_text(connect, name: str, args: dict) -> str:
    with anyio.fail_after(60):
        async with connect() as client:
            result = await client.call_tool(name, args)
    assert result.is_error
    return text(result)


@pytest.mark.anyio
async def test_path_outside_allowed_dirs_names_them(connect, tmp_path: Path) -> None:
    """Paths are confined to the allowed directories, and the refusal says which they are."""
    message = await error_text(connect, "load_trace", {"path": "/etc/passwd"})
    assert "outside the allowed directories" in message
    assert str(tmp_path.resolve()) in message


@pytest.mark.anyio
async def test_missing_file_is_an_actionable_error(connect, tmp_path: Path) -> None:
    """A missing trace is a ToolError, not a masked exception."""
    message = await error_text(connect, "inspect_trace", {"path": str(tmp_path / "no.json")})
    assert "does not exist" in message


@pytest.mark.anyio
async def test_unknown_run_id_names_the_known_ones(connect) -> None:
    """An unknown run id tells the model to start with load_trace."""
    message = await error_text(connect, "prepare_category_data", {"run_id": "run-9"})
    assert "known runs: none yet" in message and "load_trace" in message


@pytest.mark.anyio
async def test_analysis_before_prepare_names_the_step(connect, trace: Path) -> None:
    """A step asked for too early names the tool to call first."""
    with anyio.fail_after(120):
        async with connect() as client:
            run_id = (await call(client, "load_trace", {"path": str(trace)}))["run_id"]
            result = await client.call_tool(
                "run_category_analysis", {"run_id": run_id, "category": "gemm"}
            )
    assert result.is_error and "prepare_category_data" in text(result)


@pytest.mark.anyio
async def test_invalid_submission_lists_the_problems(connect, trace: Path) -> None:
    """Submitted prose that breaks the findings rules comes back with every problem."""
    with anyio.fail_after(120):
        async with connect() as client:
            run_id = (await call(client, "load_trace", {"path": str(trace)}))["run_id"]
            prepared = await call(client, "prepare_category_data", {"run_id": run_id})
            key = next(c["name"] for c in prepared["categories"] if c["analysable"])
            await call(client, "run_category_analysis", {"run_id": run_id, "category": key})
            result = await client.call_tool(
                "submit_findings",
                {"run_id": run_id, "category": key, "items": [{"rank": 99, "title": "x"}]},
            )
    assert result.is_error and "submit" in text(result).lower()


@pytest.mark.anyio
async def test_run_full_analysis_reports_progress_and_a_valid_report(connect, trace: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect() as client:
        result = await client.call_tool(
            "run_full_analysis", {"path": str(trace)}, progress_callback=on_progress
        )
    assert not result.is_error, text(result)
    report = result.structured_content["report"]
    assert report["problems"] == []
    assert [p for p, _, _ in seen] == [0, 1, 2, 3, 4, 5]
    assert all(total == 5 for _, total, _ in seen)


@pytest.mark.anyio
async def test_a_run_survives_a_server_restart(tmp_path: Path, trace: Path) -> None:
    """The run folder records the run; a new server finds it and rebuilds its engine data."""
    first = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    async with Client(first) as client:
        run_id = (await call(client, "load_trace", {"path": str(trace)}))["run_id"]
    second = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    async with Client(second) as client:
        prepared = await call(client, "prepare_category_data", {"run_id": run_id})
        assert any(c["name"] == "gemm" for c in prepared["categories"])
        again = await call(client, "load_trace", {"path": str(trace)})
        assert again["run_id"] != run_id  # the earlier run's folder is not overwritten


@pytest.mark.anyio
async def test_a_trace_over_the_size_limit_is_refused_before_it_is_read(
    connect, trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROOFLENS_MAX_TRACE_MB", "0.01")
    message = await error_text(connect, "load_trace", {"path": str(trace)})
    assert "over the 0 MB limit" in message and "ROOFLENS_MAX_TRACE_MB" in message
