"""Graph-capture traces through the front ends, on a hand-built replay and its
`capture_traces/` folder (the counterpart of server/test_captures.py).

Planted (tests/helpers/capture_traces.py): two graph launches, each replaying three kernels
(gemm_a, act, gemm_a) that the batch-32 FULL capture trace launched from `aten::mm` /
`aten::gelu` with shapes. Merged, every replayed kernel has an operator with a roofline;
unmerged, none has.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from rooflens.cli.main import main
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.capture_traces import write_case
from tests.helpers.mcp_client import call, error_of
from tests.helpers.trace_builder import TraceBuilder


@pytest.fixture
def replay(tmp_path: Path) -> Path:
    folder = tmp_path / "replay"
    folder.mkdir()
    return write_case(TraceBuilder(folder), iterations=2, batch=16)


def test_inspect_says_which_captures_were_merged(replay: Path, capsys) -> None:
    assert main(["inspect", str(replay)]) == 0
    out = capsys.readouterr().out
    assert "Captures   2 of 2 graph launches merged from capture_traces/: bs32.json" in out
    assert "(batch 32, FULL)" in out
    assert main(["inspect", str(replay), "--no-captures"]) == 0
    out = capsys.readouterr().out
    assert "Captures" not in out and "--capture-folder" in out  # the graph_replay hint


def test_report_with_a_missing_capture_folder_is_a_clear_error(replay: Path, capsys) -> None:
    nowhere = str(replay.parent / "nowhere")
    out = str(replay.parent / "out")
    code = main(
        ["report", str(replay), "--platform", "MI300X", "--out", out, "--capture-folder", nowhere]
    )
    assert code == 2
    assert "capture folder does not exist" in capsys.readouterr().err


def test_report_coverage_with_and_without_captures(replay: Path, capsys) -> None:
    out = str(replay.parent / "out")
    assert main(["report", str(replay), "--platform", "MI300X", "--out", out]) == 0
    merged = capsys.readouterr().out
    assert main(["report", str(replay), "--platform", "MI300X", "--out", out, "--no-captures"]) == 0
    plain = capsys.readouterr().out
    assert "Kernel time with a roofline: 100.0 %" in merged
    assert "Kernel time with a roofline: 0.0 %" in plain  # replayed kernels have no operator


@pytest.mark.anyio
async def test_load_trace_merges_captures_and_a_restart_keeps_them(
    tmp_path: Path, replay: Path
) -> None:
    server = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    async with Client(server) as client:
        loaded = await call(client, "load_trace", {"path": str(replay), "platform": "MI300X"})
    codes = {w["code"] for w in loaded["health_warnings"]}
    assert "graph_capture_merged" in codes and "graph_replay" not in codes
    run_json = Path(loaded["output_dir"]) / "run.json"
    assert '"captures": "auto"' in run_json.read_text()
    restarted = build_server(ServerConfig(allowed_dirs=[tmp_path]))
    async with Client(restarted) as client:
        prepared = await call(client, "prepare_category_data", {"run_id": loaded["run_id"]})
    assert {c["name"] for c in prepared["categories"]} >= {"gemm"}


@pytest.mark.anyio
async def test_a_capture_folder_outside_the_allowed_dirs_is_refused(
    tmp_path: Path, replay: Path
) -> None:
    server = build_server(ServerConfig(allowed_dirs=[replay.parent]))
    async with Client(server) as client:
        message = await error_of(
            client, "load_trace", {"path": str(replay), "capture_folder": str(tmp_path)}
        )
    assert "outside the allowed directories" in message
