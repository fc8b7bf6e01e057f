"""CSV cells escaped on disk, read back as the trace had them by every rooflens reader.

The hostile trace (tests/helpers/hostile_trace.py) names operators and kernels with formula
triggers and a prompt sentence, one operator `'@quoted ...` (a quote before a trigger, which
must round-trip). A comparative run of it and a hostile job are made over MCP; the CLI makes
an escaped and a raw run. The files must hold only safe cells; the resources, `list_tables`
and `query_operations` must give the original names; numbers are never quoted.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from mcp import Client

from rooflens.analyzers.report.csv_cells import needs_escape
from rooflens.analyzers.synthetic import sample as syn
from rooflens.cli.main import main
from rooflens.resources import run_files as rf
from rooflens.resources.access import RunInfo
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.hostile_trace import (
    KERNELS,
    OPS,
    PROCESS_GROUP,
    PROMPT,
    write_hostile_job,
    write_hostile_trace,
)
from tests.helpers.mcp_client import call

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

csv.field_size_limit(sys.maxsize)
NAMES = set(OPS.values())
DELTA = "delta_us (trace2 - trace1)"
NEXT_PAGE = re.compile(r"^# rows \d+-\d+ of \d+; next page: (\S+)")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def parse(text: str) -> list[list[str]]:
    """A CSV text's records."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return rows


def read_csv(path: Path) -> list[list[str]]:
    """A CSV file's records (opened as CSV files must be: a CR in a cell stays a CR)."""
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.reader(f))


def cells(rows: list[list[str]]) -> set[str]:
    return {c for row in rows for c in row}


def unsafe(folder: Path) -> list[tuple[str, str]]:
    """Cells of the folder's CSVs that a spreadsheet would evaluate."""
    found = []
    for path in sorted(folder.rglob("*.csv")):
        for cell in cells(read_csv(path)):
            if needs_escape(cell) and not cell.startswith("'"):
                found.append((path.relative_to(folder).as_posix(), cell[:60]))
    return found


def column(rows: list[list[str]], name: str) -> list[str]:
    at = rows[0].index(name)
    return [r[at] for r in rows[1:]]


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory):
    """A comparative run of two hostile traces and a hostile job, over MCP: the folders and
    what the resources and tools gave."""
    allowed = tmp_path_factory.mktemp("csv_readers")
    trace = write_hostile_trace(allowed / "hostile.json.gz")
    # one layer, two kernels named otherwise: the tree diff finds what trace 2 does faster
    kernels = {syn.GELU: f"@gelu {PROMPT}", syn.ADD: "add_kernel"}
    other = write_hostile_trace(allowed / "hostile_one_layer.json.gz", layers=1, more=kernels)
    write_hostile_job(allowed / "job")
    read: dict[str, str] = {}
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:

        async def resource(uri: str) -> str:
            """The whole resource, every page of a table joined (its `#` lines left out)."""
            text, page = "", uri
            while page:
                got = (await client.read_resource(page)).contents[0].text
                head, _, last = got.rstrip("\n").rpartition("\n")
                more = NEXT_PAGE.search(last)
                page = more.group(1) if more else None
                body = head + "\n" if more else got
                text += body if not text else body.split("\n", 1)[1]  # one header
            read[uri] = text
            return text

        load = {"path": str(trace), "compare_with": str(other), "platform": "MI300X"}
        loaded = await call(client, "load_trace", load)
        run = loaded["run_id"]
        await call(client, "prepare_category_data", {"run_id": run})
        base = f"rooflens://runs/{run}"
        for table in ("unified_perf_summary", "kernel_summary", "ops_summary"):
            await resource(f"{base}/tables/{table}")
        await resource(f"{base}/trace1/tables/diff_stats")
        await resource(f"{base}/trace1/tables/unified_perf_summary")
        await resource(f"{base}/trace2/tables/unified_perf_summary")
        await resource(f"{base}/ops/other")
        await resource(f"{base}/ops/elementwise")
        listing = json.loads(await resource(f"{base}/tables"))
        page = await call(client, "query_operations", {"run_id": run, "limit": 100})
        job = await call(client, "load_job", {"paths": ["job"], "until": "none", "workers": 1})
        await resource(f"rooflens://jobs/{job['job_id']}/tables/nccl_implicit_sync")
    return {
        "run": Path(loaded["output_dir"]),
        "job": Path(job["output_dir"]),
        "read": read,
        "base": base,
        "listing": listing,
        "page": page,
    }


@pytest.mark.anyio
async def test_every_csv_of_the_run_and_the_job_is_safe_and_escaped_on_disk(served) -> None:
    run, job = served["run"], served["job"]
    assert unsafe(run) == [] and unsafe(job) == []
    assert json.loads((run / "run.json").read_text())["csv_cells"] == "escaped"
    assert json.loads((job / "job.json").read_text())["csv_cells"] == "escaped"
    written = cells(read_csv(run / "perf_report_csvs/unified_perf_summary.csv"))
    assert {"'" + n for n in NAMES} <= written  # `'@quoted` is written `''@quoted`
    nccl = read_csv(job / "job_tables/nccl_implicit_sync.csv")
    assert column(nccl, "Process Group Name") == ["'" + PROCESS_GROUP]


@pytest.mark.anyio
async def test_the_resources_serve_every_name_as_the_trace_has_it(served) -> None:
    read, base = served["read"], served["base"]
    for table in ("tables/unified_perf_summary", "trace1/tables/unified_perf_summary"):
        names = set(column(parse(read[f"{base}/{table}"]), "name"))
        assert names >= NAMES, table
        assert not {"'" + n for n in NAMES} & names, table
    trace2 = set(column(parse(read[f"{base}/trace2/tables/unified_perf_summary"]), "name"))
    assert trace2 >= NAMES
    kernels = set(column(parse(read[f"{base}/tables/kernel_summary"]), "Kernel name"))
    assert set(KERNELS.values()) <= kernels
    ops = [
        set(column(parse(read[f"{base}/ops/{key}"]), "name")) for key in ("other", "elementwise")
    ]
    assert set.union(*ops) >= NAMES
    stats = cells(parse(read[f"{base}/trace1/tables/diff_stats"]))
    hostile = NAMES | set(KERNELS.values())
    assert {OPS["aten::gelu_backward"], KERNELS[syn.ADD]} <= stats
    assert not {"'" + n for n in hostile} & stats
    (nccl,) = [text for uri, text in read.items() if uri.endswith("/nccl_implicit_sync")]
    assert column(parse(nccl), "Process Group Name") == [PROCESS_GROUP]


@pytest.mark.anyio
async def test_negative_numbers_stay_numbers_in_the_files_and_the_resources(served) -> None:
    """The trace-1 tables' delta (trace 2 minus trace 1, µs) is negative where trace 2 is
    faster: a number, never quoted or escaped."""
    written = read_csv(served["run"] / "perf_report_trace1_csvs/unified_perf_summary.csv")
    served_rows = parse(served["read"][f"{served['base']}/trace1/tables/unified_perf_summary"])
    deltas = column(written, DELTA)
    negative = [d for d in deltas if d.startswith("-")]
    assert negative and all(float(d) < 0 for d in negative)
    assert column(served_rows, DELTA) == deltas


@pytest.mark.anyio
async def test_list_tables_and_query_operations_give_the_original_names(served) -> None:
    names = {row["name"] for row in served["page"]["rows"]}
    assert names >= NAMES
    (unified,) = [t for t in served["listing"]["tables"] if t["name"] == "unified_perf_summary"]
    assert unified["header"].startswith("name,op category,")
    written = served["run"] / "perf_report_csvs/unified_perf_summary.csv"
    assert unified["rows"] == len(read_csv(written)) - 1


def stub_page(folder: Path, escaped: bool, table: str) -> str:
    """The table resource's reader on a run the server did not make (a CLI run)."""
    info = RunInfo(
        id="run-000000000000",
        folder=folder,
        trace_name="hostile.json.gz",
        platform="MI300X",
        created="",
        steps=("loaded",),
        csv_escaped=escaped,
    )
    access = SimpleNamespace(page_bytes=lambda caller: 1 << 20, run=lambda caller, rid: info)
    ctx = SimpleNamespace(request_context=SimpleNamespace(lifespan_context=None), headers=None)
    return rf.table_page(access, ctx, info.id, table, "")


@pytest.mark.parametrize("raw", [False, True])
def test_the_cli_switch_writes_raw_cells_and_records_it(tmp_path, capsys, raw) -> None:
    trace = write_hostile_trace(tmp_path / "hostile.json.gz")
    out = tmp_path / "report"
    argv = ["report", str(trace), "--platform", "MI300X", "--out", str(out), "--json"]
    assert main([*argv, "--raw-csv"] if raw else argv) == 0
    outcome = json.loads(capsys.readouterr().out)
    record = json.loads((out / "run.json").read_text())
    assert outcome["csv_cells"] == record["csv_cells"] == ("raw" if raw else "escaped")
    written = cells(read_csv(out / "perf_report_csvs/ops_summary.csv"))
    assert (written >= NAMES) is raw
    assert ({"'" + n for n in NAMES} <= written) is not raw
    assert (unsafe(out) != []) is raw
    # the reader follows the record: either way it gives the trace's own names
    page = stub_page(out, record["csv_cells"] == "escaped", "ops_summary")
    names = set(column(parse(page), "name"))
    assert names >= NAMES and not {"'" + n for n in NAMES} & names
