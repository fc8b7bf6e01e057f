"""A trace with names of a megabyte: the table resources and query_operations read its tables
(names capped where the trace is decoded, long cells read back whole, cut in a tool result)
instead of failing on the csv module's field limit."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import anyio
import pytest

from rooflens.analyzers.trace.long_names import MAX_NAME_CHARS, capped
from tests.helpers.mcp_client import call
from tests.helpers.trace_builder import TraceBuilder

MEGA = 1_000_000
OP, KERNEL = "O" * MEGA, "K" * MEGA
# an operator whose 20 kernels have names of a real templated kernel's length: its cell of
# kernel details is larger than the 128 KiB a csv field may have by default
MANY = [f"{i:02d}" + "k" * 7_990 for i in range(20)]
TABLES = ("ops_summary", "kernel_summary", "unified_perf_summary", "ops_unique_args")


def write_long_named_trace(folder: Path) -> Path:
    tb = TraceBuilder(folder)
    events = [tb.cpu_op(OP, 0, 100), *tb.launch(1, 10, 1_000, 50)]
    mm = {"Input Dims": [[32, 64], [64, 128]], "Input type": ["float", "float"]}
    events += [tb.cpu_op("aten::mm", 200, 100, args=mm)]
    events += tb.launch(2, 210, 1_100, 50, kernel_name=KERNEL)
    events += [tb.cpu_op("aten::add", 400, 400)]
    for i, name in enumerate(MANY):
        events += tb.launch(10 + i, 410 + 15 * i, 1_200 + 20 * i, 10, kernel_name=name)
    return tb.write(events, "long_names.json")


async def whole_table(client, uri: str) -> str:
    """Every page of a table resource, the header once (a long row is a page of its own)."""
    pages, offset = [], 0
    while True:
        text = (await client.read_resource(f"{uri}?offset={offset}")).contents[0].text
        lines = text.splitlines(keepends=True)
        more = lines[-1].startswith("# rows ")
        pages.append("".join(lines[1 if pages else 0 : -1 if more else None]))
        if not more:
            return "".join(pages)
        offset = int(lines[-1].rsplit("offset=", 1)[1].split(" ")[0])


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_megabyte_names_are_capped_in_the_tables_and_results(connect, allowed) -> None:
    trace = write_long_named_trace(allowed)
    with anyio.fail_after(120):
        async with connect() as client:
            run = (await call(client, "load_trace", {"path": str(trace)}))["run_id"]
            texts = {
                t: await whole_table(client, f"rooflens://runs/{run}/tables/{t}") for t in TABLES
            }
            query = {
                t: await call(client, "query_operations", {"run_id": run, "table": t})
                for t in ("ops_summary", "kernel_summary")
            }
    rows = {t: list(csv.DictReader(io.StringIO(text))) for t, text in texts.items()}
    ops = {r["name"] for r in rows["ops_summary"]}
    assert capped(OP) in ops and len(capped(OP)) == MAX_NAME_CHARS
    assert re.fullmatch(r"O{8157}… \[1,000,000 characters, #[0-9a-f]{8}\]", capped(OP))
    assert any(capped(KERNEL) in cell for r in rows["kernel_summary"] for cell in r.values())
    assert all(OP[: MAX_NAME_CHARS + 1] not in text for text in texts.values())
    assert all(name in texts["unified_perf_summary"] for name in MANY)  # cells whole
    assert max(len(cell) for r in rows["unified_perf_summary"] for cell in r.values()) > 2**17
    cut = "O" * 999 + "…"  # a result's cell: CELL_CHARS (server/tools/query.py)
    assert cut in {r["name"] for r in query["ops_summary"]["rows"]}
    assert any(
        str(cell).startswith("K" * 999 + "…")
        for r in query["kernel_summary"]["rows"]
        for cell in r.values()
    )
