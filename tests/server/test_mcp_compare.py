"""load_trace(compare_with=...) and the tools and resources of a comparative run, over MCP, on
the generated pair whose trace 2 runs the forward GELU on another kernel in half the time."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from rooflens.analyzers.synthetic.sample import write_document
from tests.helpers.compare_pairs import FAST_GELU, planted_pair
from tests.helpers.mcp_client import call, error_of, whole_report
from tests.helpers.transports import keyed


@pytest.fixture
def pair(allowed: Path) -> tuple[Path, Path, list[float]]:
    return planted_pair(allowed)


def _args(pair, **more) -> dict:
    one, two, _ = pair
    return {"path": str(one), "compare_with": str(two), "platform": "MI300X",
            "platform2": "H100", **more}  # fmt: skip


@pytest.mark.anyio
async def test_load_trace_compares_and_lists_both_traces_tables(
    connect, pair, transport: str, mode: str
) -> None:
    _, two, durations = pair
    gelu = sum(durations)
    with anyio.fail_after(120):
        async with connect() as client:
            loaded = await call(client, "load_trace", _args(pair))
            run = loaded["run_id"]
            trace1 = json.loads((await client.read_resource(
                f"rooflens://runs/{run}/trace1/tables")).contents[0].text)  # fmt: skip
            diff = (await client.read_resource(
                f"rooflens://runs/{run}/trace1/tables/diff_stats")).contents[0].text  # fmt: skip
            util2 = json.loads((await client.read_resource(
                f"rooflens://runs/{run}/trace2/utilization")).contents[0].text)  # fmt: skip
            listed = json.loads((await client.read_resource("rooflens://runs")).contents[0].text)
            again = await call(client, "load_trace", _args(pair))
            other = await call(client, "load_trace", _args(pair, compare_with=str(pair[0])))
    note = loaded["comparison"]
    assert note["trace"] == two.name and note["platform"] == "H100_SXM"
    # the planted change is the headline: the forward GELU at half its time in trace 2
    assert note["what_changed"].startswith(
        f"`aten::gelu` is faster in trace 2: {gelu:,.1f} → {gelu / 2:,.1f} µs"
    )
    assert f"rooflens://runs/{run}/trace2/tables" in loaded["resources"]
    assert {t["name"] for t in trace1["tables"]} >= {"diff_stats", "unified_perf_summary"}
    rows = list(csv.DictReader(io.StringIO(diff)))
    planted = [r for r in rows if r["name"] == FAST_GELU]
    assert len(planted) == len(durations) and {r["source"] for r in planted} == {"trace2"}
    assert sum(float(r["kernel_time"]) for r in planted) == pytest.approx(gelu / 2)
    total2 = next(r for r in note["gpu_utilisation"] if r["type"] == "total_time")["time_ms"]
    assert util2["total_time_ms"] == pytest.approx(total2)
    if keyed(transport, mode):  # nothing listed to a stateless caller, nothing reused
        assert listed["runs"] == [] and again["run_id"] != run and again["reused"] is False
    else:
        assert [(r["trace"], r["compared_with"]) for r in listed["runs"]] == [
            (pair[0].name, two.name)
        ]
        assert again["run_id"] == run and again["reused"] is True
    assert other["run_id"] != run and other["reused"] is False  # another trace 2: another run

    def codes(result: dict) -> list[str]:
        return [w["code"] for w in result["comparison"]["health_warnings"]]

    assert "same_as_trace1" in codes(other) and "same_as_trace1" not in codes(loaded)


@pytest.mark.anyio
async def test_compare_arguments_are_checked_like_the_trace(connect, pair, tmp_path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    async with connect() as client:
        beyond = await error_of(client, "load_trace", _args(pair, compare_with=str(outside)))
        alone = await error_of(client, "load_trace", {"path": str(pair[0]), "platform2": "H100"})
        unknown = await error_of(client, "load_trace", _args(pair, platform2="NoSuchGPU"))
        extra = await error_of(client, "load_trace", _args(pair, trace2=str(pair[1])))
        captures = await error_of(client, "load_trace", _args(pair, capture_folder2=str(tmp_path)))
        lonely = await error_of(
            client, "load_trace", {"path": str(pair[0]), "capture_folder2": str(pair[0].parent)}
        )
    assert "allowed directories" in beyond
    assert "pass compare_with" in alone
    assert "NoSuchGPU" in unknown and "list_platforms" in unknown
    assert "trace2" in extra
    assert "allowed directories" in captures  # trace 2's capture folder is checked too
    assert "pass compare_with" in lonely


@pytest.mark.anyio
async def test_a_standalone_run_has_no_trace_2(connect, pair) -> None:
    async with connect() as client:
        loaded = await call(client, "load_trace", {"path": str(pair[0])})
        run = loaded["run_id"]
        for uri in ("trace2/utilization", "trace1/tables", "trace2/tables/ops_summary",
                    "trace2/metrics/cpu_idle"):  # fmt: skip
            with pytest.raises(MCPError, match="compares no traces; call load_trace with"):
                await client.read_resource(f"rooflens://runs/{run}/{uri}")
    assert loaded["comparison"] is None
    assert not any("/trace2/" in uri for uri in loaded["resources"])


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["memory"])  # over HTTP a new server is a new owner
@pytest.mark.slow
async def test_full_analysis_of_a_pair_after_a_restart(connect, pair) -> None:
    """A new server finds the comparative run (same pair, same options), rebuilds both traces
    and composes a comparative report that validates."""
    with anyio.fail_after(180):
        async with connect() as client:
            first = await call(client, "load_trace", _args(pair))
        async with connect() as client:  # another server: nothing of the run in memory
            full = await call(client, "run_full_analysis", _args(pair))
            report = await whole_report(client, f"rooflens://runs/{full['run_id']}/report")
            base = f"rooflens://runs/{full['run_id']}/trace2"
            idle2 = json.loads((await client.read_resource(
                f"{base}/metrics/cpu_idle")).contents[0].text)  # fmt: skip
            util2 = json.loads((await client.read_resource(
                f"{base}/utilization")).contents[0].text)  # fmt: skip
            with pytest.raises(MCPError, match="known: cpu_idle, multi_kernel"):
                await client.read_resource(f"{base}/metrics/gemm")
    # trace 2's own CPU/idle analysis, on trace 2's window (docs/compare.md)
    assert idle2["gpu_utilization"]["total_time_ms"] == round(util2["total_time_ms"], 3)
    assert idle2["gpu_utilization"]["idle_time_percent"] == round(util2["idle_time_percent"], 2)
    assert "### Trace 1 against trace 2" in report
    assert full["run_id"] == first["run_id"] and full["reused"] is True
    assert full["comparison"]["trace"] == pair[1].name
    assert full["comparison"]["what_changed"].startswith("`aten::gelu` is faster in trace 2")
    assert f"rooflens://runs/{full['run_id']}/trace1/tables/diff_stats" in full["resources"]
    assert full["report_valid"] is True
    assert report.startswith("# ") and "Comparative Analysis: `MI300X` vs `H100_SXM`" in report
    assert "## What changed" in report and "`aten::gelu` is faster in trace 2" in report
    assert "| Metric | Trace 1 (`MI300X`) | Trace 2 (`H100_SXM`) | Difference (T1 − T2) |" in report


@pytest.mark.anyio
@pytest.mark.slow
async def test_query_operations_reads_either_trace(connect, pair) -> None:
    """Trace 1's GELU row carries trace 2's time under the shared operator (half of its own),
    and trace=2 reads the reference's own rows, whose GELU runs on the planted kernel."""
    _, _, durations = pair
    gelu = sum(durations)
    async with connect() as client:
        run = (await call(client, "load_trace", _args(pair)))["run_id"]
        one = await call(client, "query_operations", {
            "run_id": run, "name_contains": "aten::gelu",
            "columns": ["name", "Kernel Time (µs)_sum", "lca_total_kernel_time_trace2_us",
                        "speedup (trace2/trace1)"]})  # fmt: skip
        two = await call(client, "query_operations", {
            "run_id": run, "trace": 2, "name_contains": "aten::gelu",
            "columns": ["name", "Kernel Time (µs)_sum", "kernel"]})  # fmt: skip
        listed = await call(client, "list_tables", {"run_id": run})
        alone = (await call(client, "load_trace", {"path": str(pair[0])}))["run_id"]
        refused = await error_of(client, "query_operations", {"run_id": alone, "trace": 2})
    forward = [r for r in one["rows"] if r["lca_total_kernel_time_trace2_us"] is not None]
    assert sum(r["Kernel Time (µs)_sum"] for r in forward) == pytest.approx(gelu)
    assert sum(r["lca_total_kernel_time_trace2_us"] for r in forward) == pytest.approx(gelu / 2)
    assert all(r["speedup (trace2/trace1)"] == pytest.approx(0.5) for r in forward)
    assert any(r["kernel"] == FAST_GELU for r in two["rows"])
    by_trace = {(t["trace"], t["name"]): t["resource"] for t in listed["tables"]}
    assert by_trace[(1, "unified_perf_summary")].endswith("/trace1/tables/unified_perf_summary")
    assert by_trace[(2, "ops_summary")].endswith("/trace2/tables/ops_summary")
    assert "compares no traces" in refused


@pytest.mark.anyio
@pytest.mark.slow
async def test_trace_2_health_reaches_the_load_result_and_the_report(connect, pair) -> None:
    """A trace 2 recorded without shapes: load_trace says so under `comparison`, and the
    report's trace-health part lists it as trace 2's."""
    two = pair[1]
    document = json.loads(gzip.decompress(two.read_bytes()))
    for event in document["traceEvents"]:
        (event.get("args") or {}).pop("Input Dims", None)
    shapeless = write_document(two.with_name("trace2_no_shapes.json.gz"), document)
    args = _args(pair, compare_with=str(shapeless))
    with anyio.fail_after(120):
        async with connect() as client:
            loaded = await call(client, "load_trace", args)
            full = await call(client, "run_full_analysis", args)
            report = await whole_report(client, f"rooflens://runs/{full['run_id']}/report")
    assert [w["code"] for w in loaded["comparison"]["health_warnings"]] == ["no_shapes"]
    assert loaded["health_warnings"] == []  # trace 1 has its shapes
    assert "Trace 2: Operator input shapes were not recorded" in report
    assert full["report_valid"] is True
