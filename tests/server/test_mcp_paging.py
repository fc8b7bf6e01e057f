"""A comparative run's tables, read as a model reads them: table resources a page at a time
(never a whole table past the result limit), and query_operations on the tree diff's tables,
on the generated pair whose trace 2 runs the forward GELU on another kernel in half the time."""

from __future__ import annotations

import csv
import io
import json

import anyio
import pytest
from mcp import MCPError

from rooflens.analyzers import layout
from rooflens.server.settings import WORKSPACE_NAME
from tests.helpers.compare_pairs import FAST_GELU, planted_pair
from tests.helpers.mcp_client import call, error_of
from tests.helpers.transports import plain_id

LIMIT = 4096  # the smallest result limit a server takes: the tables need several pages


def _args(pair) -> dict:
    one, two, _ = pair
    return {"path": str(one), "compare_with": str(two), "platform": "MI300X", "platform2": "H100"}


async def _text(client, uri: str) -> str:
    return (await client.read_resource(uri)).contents[0].text


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_table_resources_come_in_pages_that_add_up_to_the_table(connect, allowed) -> None:
    pair = planted_pair(allowed)
    with anyio.fail_after(120):
        async with connect(max_result_bytes=LIMIT) as client:
            run = (await call(client, "load_trace", _args(pair)))["run_id"]
            uri = f"rooflens://runs/{run}/trace1/tables/unified_perf_summary"
            pages, offset = [], 0
            while offset is not None:
                page = await _text(client, f"{uri}?offset={offset}" if offset else uri)
                pages.append(page)
                last = page.rstrip("\n").rsplit("\n", 1)[-1]
                offset = int(last.rsplit("?offset=", 1)[1].split()[0]) if last[0] == "#" else None
            bad = await error_of_resource(client, f"{uri}?offset=-3")
    folder = allowed / WORKSPACE_NAME / plain_id(run)
    table = folder / layout.TRACE1_CSVS / "unified_perf_summary.csv"
    whole = _rows(table.read_text(encoding="utf-8"))
    assert len(pages) > 2 and all(len(p.encode()) <= LIMIT + 200 for p in pages)
    first = pages[0].rstrip("\n").rsplit("\n", 1)[-1]
    shown = len(_rows(pages[0])) - 2  # less the header and the note
    assert first == (
        f"# rows 1-{shown} of {len(whole) - 1}; next page: {uri}?offset={shown} "
        "(query_operations(table=...) sorts, filters and selects columns)"
    )
    joined = [whole[0]]
    for page in pages:
        rows = [r for r in _rows(page) if not r[0].startswith("# rows")]
        assert rows[0] == whole[0]  # every page starts with the header
        joined += rows[1:]
    assert joined == whole
    assert "offset must be a whole number of rows (0 or more), not '-3'" in bad


async def error_of_resource(client, uri: str) -> str:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri)
    return str(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_query_operations_reads_the_tree_diff(connect, allowed) -> None:
    pair = planted_pair(allowed)
    gelu = sum(pair[2])
    with anyio.fail_after(120):
        async with connect() as client:
            run = (await call(client, "load_trace", _args(pair)))["run_id"]
            listed = await call(client, "list_tables", {"run_id": run})
            diff = await call(
                client, "query_operations",
                {"run_id": run, "table": "diff_stats", "name_contains": FAST_GELU},
            )  # fmt: skip
            lcas = await call(
                client, "query_operations",
                {"run_id": run, "table": "diff_lca_totals", "name_contains": "gelu"},
            )  # fmt: skip
            wrong = await error_of(client, "query_operations", {"run_id": run, "table": "nope"})
            no_cat = await error_of(
                client, "query_operations",
                {"run_id": run, "table": "diff_stats", "category": "gemm"},
            )  # fmt: skip
            other = await error_of(
                client, "query_operations", {"run_id": run, "table": "diff_stats", "trace": 2}
            )
    names = {(t["name"], t["trace"]) for t in listed["tables"]}
    assert {("diff_stats", 1), ("diff_lca_totals", 1), ("unified_perf_summary", 2)} <= names
    assert diff["table"] == "diff_stats" and diff["total"] == len(pair[2])
    assert diff["columns"] == [
        "name", "cpu_op_name", "source", "kernel_time", "lowest_common_ancestor_name",
        "lowest_common_ancestor_id", "nn_module_parent",
    ]  # fmt: skip
    assert {r["source"] for r in diff["rows"]} == {"trace2"}
    assert sum(r["kernel_time"] for r in diff["rows"]) == pytest.approx(gelu / 2)
    # the shared aten::gelu above both kernels: trace 1's time, trace 2's half, the difference
    rows = [r for r in lcas["rows"] if r["lca_name"] == "aten::gelu"]
    assert sum(r["kernel_time_trace1_us"] for r in rows) == pytest.approx(gelu)
    assert sum(r["kernel_time_trace2_us"] for r in rows) == pytest.approx(gelu / 2)
    assert sum(r["delta_us (trace2 - trace1)"] for r in rows) == pytest.approx(-gelu / 2)
    assert "has no table 'nope' for trace 1; its tables are: diff_lca_totals, diff_stats" in wrong
    assert "diff_stats has no 'op category' column" in no_cat
    assert "has no table 'diff_stats' for trace 2" in other


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_a_load_error_that_says_what_to_pass_gets_no_second_hint(connect, allowed) -> None:
    one, _, _ = planted_pair(allowed)
    async with connect() as client:
        both = await error_of(
            client, "load_trace", {"path": str(one), "platform": "H100", "platform_file": "p.json"}
        )
        missing = await error_of(client, "load_trace", {"path": str(one), "compare_with": "x.json"})
    assert both.endswith("pass either platform or platform_file, not both")
    assert missing.endswith(f"x.json does not exist; pass an existing path under {allowed}")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_a_large_metrics_file_keeps_its_findings_and_pages_its_operations(
    connect, allowed
) -> None:
    pair = planted_pair(allowed)
    with anyio.fail_after(120):
        async with connect(max_result_bytes=LIMIT) as client:
            run = (await call(client, "load_trace", _args(pair)))["run_id"]
            await call(client, "prepare_category_data", {"run_id": run})
            await call(client, "run_category_analysis", {"run_id": run, "category": "gemm"})
            uri = f"rooflens://runs/{run}/metrics/gemm"
            pages, nxt = [], uri
            while nxt:
                pages.append(json.loads(await _text(client, nxt)))
                nxt = pages[-1]["operations_page"]["next"]
    folder = allowed / WORKSPACE_NAME / plain_id(run)
    whole = json.loads((folder / layout.metrics("gemm")).read_text())
    assert len(json.dumps(whole)) > LIMIT and len(pages) > 1  # the file needs pages
    assert [op for p in pages for op in p["operations"]] == whole["operations"]
    for page in pages:  # everything but the operations comes whole on every page
        assert {k: v for k, v in page.items() if k not in ("operations", "operations_page")} == {
            k: v for k, v in whole.items() if k != "operations"
        }
    assert pages[0]["operations_page"] == {
        "offset": 0,
        "shown": len(pages[0]["operations"]),
        "total": len(whole["operations"]),
        "next": f"{uri}?offset={len(pages[0]['operations'])}",
    }
    assert whole["comparison_scope"] == "comparative" and "t2_time_ms" in whole["operations"][0]
