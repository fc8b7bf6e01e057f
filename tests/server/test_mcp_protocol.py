"""What the server promises at the protocol level: strict arguments, bounded results, the
right error codes, logging and list-changed notifications."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPDeprecationWarning, MCPError
from mcp.types import INVALID_PARAMS, ResourceListChangedNotification, ServerNotification

from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call, error_of

DUMMY = {"string": "x", "integer": 1, "boolean": False, "array": ["x"], "object": {}}


def dummy_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """A value of the declared type for every required argument."""
    out = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        kind = prop.get("type") or next(
            (o.get("type") for o in prop.get("anyOf", []) if o.get("type") != "null"), "object"
        )
        out[name] = "run-000000000000" if name == "run_id" else DUMMY.get(kind, "x")
    return out


@pytest.mark.anyio
@pytest.mark.stdio
async def test_every_tool_refuses_an_unknown_argument_and_lists_its_arguments(connect) -> None:
    """Unknown arguments were silently dropped (comparison_scope, executive_summary); now each
    tool refuses them, naming the ones it takes."""
    async with connect() as client:
        tools = (await client.list_tools()).tools
        for tool in tools:
            args = {**dummy_arguments(tool.input_schema), "comparison_scope": "standalone"}
            message = await error_of(client, tool.name, args)
            assert "has no argument 'comparison_scope'" in message, (tool.name, message)
            for name in tool.input_schema.get("properties", {}):
                assert name in message, (tool.name, name)


@pytest.mark.anyio
@pytest.mark.slow
async def test_categories_are_accepted_by_key_or_display_name_in_any_case(connect, sample) -> None:
    async with connect() as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        await call(client, "prepare_category_data", {"run_id": run_id})
        keys = set()
        for given in ("gemm", "GEMM", "Gemm", "norm_fwd", "NORM_fwd"):
            args = {"run_id": run_id, "category": given}
            keys.add((await call(client, "run_category_analysis", args))["category"])
        page = await call(client, "query_operations", {"run_id": run_id, "category": "NORM_FWD"})
    assert keys == {"gemm", "norm_fwd"}
    assert page["total"] > 0 and {r["op category"] for r in page["rows"]} == {"NORM_fwd"}


@pytest.mark.anyio
async def test_query_operations_is_compact_by_default_and_pages_within_the_limit(
    allowed: Path, sample: Path, mode: str
) -> None:
    """A small default column set; long columns only when asked; every page within the
    configured limit, with has_more and next_offset to go on."""
    limit = 4096
    server = build_server(ServerConfig(allowed_dirs=[allowed], max_result_bytes=limit))
    async with Client(server, mode=mode) as client:
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        first = await client.call_tool("query_operations", {"run_id": run_id})
        page = first.structured_content
        assert page["columns"][:3] == ["name", "op category", "operation_count"]
        assert "call_stack_full" not in page["rows"][0]
        wide = ["name", "call_stack_full", "kernel_details_summary"]
        seen, offset, sizes = [], 0, []
        while offset is not None:
            args = {"run_id": run_id, "columns": wide, "limit": 200, "offset": offset}
            result = await client.call_tool("query_operations", args)
            assert not result.is_error, result.content
            sizes.append(len(result.model_dump_json(by_alias=True, exclude_none=True)))
            seen += [r["name"] for r in result.structured_content["rows"]]
            offset = result.structured_content["next_offset"]
        unknown = await error_of(client, "query_operations", {"run_id": run_id, "columns": ["x"]})
    assert len(sizes) > 1 and max(sizes) <= limit
    assert len(seen) == page["total"]
    assert "unknown column(s) 'x'" in unknown and "Kernel Time (µs)_sum" in unknown


@pytest.mark.anyio
async def test_prompt_errors_are_invalid_params(connect) -> None:
    """JSON-RPC code -32602 for an unknown prompt or a missing argument (was 0)."""
    async with connect() as client:
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("no-such-prompt", {})
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("gemm", {})
    assert unknown.value.error.code == INVALID_PARAMS
    assert missing.value.error.code == INVALID_PARAMS and "run_id" in missing.value.error.message


@pytest.mark.anyio
async def test_log_messages_follow_set_level_on_handshake_connections(allowed, sample) -> None:
    received: list[Any] = []

    async def on_log(params) -> None:
        received.append(params)

    server = build_server(ServerConfig(allowed_dirs=[allowed]))
    async with Client(server, mode="legacy", logging_callback=on_log) as client:
        await call(client, "load_trace", {"path": str(sample), "fresh": True})
        quiet = list(received)  # default level: warning and above
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.set_logging_level("info")
        await call(client, "load_trace", {"path": str(sample), "fresh": True})
    assert quiet == []
    assert any("perf report of" in str(p.data) and p.level == "info" for p in received)


@pytest.mark.anyio
async def test_log_messages_follow_the_request_opt_in_on_2026_connections(allowed, sample) -> None:
    received: list[Any] = []

    async def on_log(params) -> None:
        received.append(params)

    server = build_server(ServerConfig(allowed_dirs=[allowed]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        client = Client(server, mode="2026-07-28", logging_callback=on_log, log_level="info")
    async with client:
        await call(client, "load_trace", {"path": str(sample)})
    assert any("perf report of" in str(p.data) for p in received)


@pytest.mark.anyio
async def test_a_new_run_announces_that_the_resource_list_changed(allowed, sample) -> None:
    notes: list[Any] = []

    async def on_message(message) -> None:
        if isinstance(message, ServerNotification):
            notes.append(message)

    server = build_server(ServerConfig(allowed_dirs=[allowed]))
    async with Client(server, mode="legacy", message_handler=on_message) as client:
        caps = client.server_capabilities
        before = {str(r.uri) for r in (await client.list_resources()).resources}
        run_id = (await call(client, "load_trace", {"path": str(sample)}))["run_id"]
        after = {str(r.uri) for r in (await client.list_resources()).resources}
    assert caps.resources is not None and caps.resources.list_changed is True
    assert caps.logging is not None
    assert any(isinstance(n, ResourceListChangedNotification) for n in notes)
    assert after - before == {f"rooflens://runs/{run_id}/tables"}


@pytest.mark.anyio
@pytest.mark.slow
async def test_every_result_of_a_full_run_stays_within_the_limit(connect, sample) -> None:
    async with connect() as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        result = await client.call_tool("run_full_analysis", {"path": str(sample)})
        run_id = result.structured_content["run_id"]
        sizes = {"run_full_analysis": len(result.model_dump_json(by_alias=True))}
        for name, args in [
            ("list_platforms", {}),
            ("inspect_trace", {"path": str(sample)}),
            ("list_tables", {"run_id": run_id}),
            ("get_model_identification_data", {"run_id": run_id}),
            ("query_operations", {"run_id": run_id, "limit": 200}),
            ("draft_findings", {"run_id": run_id, "category": "gemm"}),
            ("validate_run", {"run_id": run_id}),
        ]:
            assert name in tools
            found = await client.call_tool(name, args)
            assert not found.is_error, found.content
            sizes[name] = len(found.model_dump_json(by_alias=True))
    assert max(sizes.values()) <= 16_384, sizes
    assert json.dumps(sizes)


@pytest.mark.anyio
@pytest.mark.stdio
async def test_bad_arguments_are_named_one_line_each_and_unknown_ones_refused_first(
    connect,
) -> None:
    """Pydantic's dump (counts, model names, type codes, a web link) was passed on as is, and
    an unknown argument went unnoticed while another argument was invalid."""
    async with connect() as client:
        empty = await error_of(client, "load_job", {"paths": []})
        two = await error_of(client, "load_job", {"paths": ["job"], "until": "done", "workers": 0})
        unknown = await error_of(client, "load_job", {"paths": [], "ranks": 8})
    assert empty == (
        "load_job: invalid argument(s): paths: List should have at least 1 item after "
        "validation, not 0"
    )
    assert two == (
        "load_job: invalid argument(s): until: Input should be 'none', 'loaded', 'prepared', "
        "'analysed', 'drafted', 'aggregated' or 'reported'; workers: Input should be greater "
        "than or equal to 1"
    )
    assert unknown == (
        "load_job has no argument 'ranks'; its arguments are: output_dir, paths, platform, "
        "rank_regex, until, workers"
    )
