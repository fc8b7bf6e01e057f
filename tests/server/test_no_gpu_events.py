"""A trace with no GPU events is refused before anything is written, by the CLI and by the
tools, with a message that says what is missing and how to profile again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.cli.main import main


def host_only_trace(folder: Path) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1,
         "ts": 1000 + 10 * i, "dur": 5, "args": {}}
        for i in range(10)
    ]  # fmt: skip
    path = folder / "host_only.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_analyze_refuses_and_writes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(
        ["analyze", str(host_only_trace(tmp_path)), "--platform", "MI300X", "--out", str(out)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "host_only.json cannot be analysed: the trace holds no GPU events" in err
    assert "ProfilerActivity.CUDA" in err
    assert not out.exists()


@pytest.mark.anyio
async def test_the_prepare_tool_refuses_with_the_same_reason(connect, allowed: Path) -> None:
    trace = host_only_trace(allowed)
    async with connect() as client:
        loaded = await client.call_tool("load_trace", {"path": str(trace), "platform": "MI300X"})
        assert not loaded.is_error  # the host-side perf report is still worth having
        codes = [w["code"] for w in loaded.structured_content["health_warnings"]]
        assert "no_gpu_events" in codes  # and the model is told analyses will refuse
        run_id = loaded.structured_content["run_id"]
        refused = await client.call_tool("prepare_category_data", {"run_id": run_id})
        assert refused.is_error
        message = refused.content[0].text
        assert "cannot be analysed: the trace holds no GPU events" in message


@pytest.mark.anyio
async def test_the_full_analysis_refuses_before_writing_a_run(connect, allowed: Path) -> None:
    trace = host_only_trace(allowed)
    async with connect() as client:
        refused = await client.call_tool("run_full_analysis", {"path": str(trace)})
    assert refused.is_error
    assert "cannot be analysed: the trace holds no GPU events" in refused.content[0].text
    assert not any(allowed.rglob("run.json"))  # no run folder, not even the perf report
