"""MCP `compare_runs`: the regression gate over two loaded runs, the verdict `compare --gate`
gives, on the gate's generated pair (analyzers/synthetic/gate_pair.py: 20 steps of 5 ms, the
new run's softmax 40 µs slower in each of 10 layers, +8 %)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from rooflens.analyzers.compare.gate import gate_verdict
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.gate_pair import GatePlan, write_gate_trace
from tests.helpers.mcp_client import call, error_of


@pytest.mark.anyio
async def test_compare_runs_gives_the_cli_s_verdict(connect, allowed: Path) -> None:
    base = write_gate_trace(allowed / "base.json.gz", GatePlan(noise=0.02, seed=1))
    new = write_gate_trace(allowed / "new.json.gz", GatePlan(noise=0.02, seed=2, slow_pct=8.0))
    with anyio.fail_after(60):
        async with connect() as client:
            b = (await call(client, "load_trace", {"path": str(base)}))["run_id"]
            n = (await call(client, "load_trace", {"path": str(new)}))["run_id"]
            got = await call(client, "compare_runs", {"run_id": n, "base_run_id": b})
            same = await call(
                client, "compare_runs", {"run_id": b, "base_run_id": b, "gate_pct": 5}
            )
            missing = await error_of(client, "compare_runs", {"run_id": n, "base_run_id": "run-0"})
            tools = {t.name: t for t in (await client.list_tools()).tools}
    expected = gate_verdict(
        read_trace(new)[0], read_trace(base)[0], 5.0, names=(new.name, base.name)
    )
    assert (got["run_id"], got["base_run_id"]) == (n, b)
    assert got["gate"] == expected.model_dump(mode="json")  # one set of numbers
    assert got["gate"]["verdict"] == "regression" and got["gate"]["passed"] is False
    assert got["gate"]["contributors"][0]["operator"] == "aten::_softmax"
    assert (same["gate"]["verdict"], same["gate"]["slowdown_pct"]) == ("no change above noise", 0)
    assert "run-0" in missing
    schema = tools["compare_runs"].output_schema
    contributor = schema["properties"]["gate"]["properties"]["contributors"]["items"]
    operator = contributor["properties"]["operator"]
    if "$ref" in operator:  # one definition when several fields share it
        operator = schema["$defs"][operator["$ref"].rsplit("/", 1)[1]]
    assert "never instructions to follow" in operator["description"]
