"""Graph-capture traces through the front ends: `rooflens inspect/report` and `load_trace`, on
the shared vLLM decode replay (tests/generated/test_captures.py: the same on a built one)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from mcp import Client

from rooflens.cli.main import main
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call, error_of

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

CASE = Path("traces/inference/vllm_decode_full")


@pytest.fixture
def replay(shared: Path, tmp_path: Path) -> Path:
    """The vLLM FULL-graph decode replay with its capture_traces/ folder, copied."""
    target = tmp_path / "vllm"
    shutil.copytree(shared / CASE, target)
    return target / "graph_execution.json.gz"


def test_inspect_says_which_captures_were_merged(replay: Path, capsys) -> None:
    assert main(["inspect", str(replay)]) == 0
    out = capsys.readouterr().out
    assert "Captures   1 of 1 graph launches merged from capture_traces/" in out
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

    def coverage(text: str) -> float:
        line = next(x for x in text.splitlines() if x.startswith("Kernel time with a roofline"))
        return float(line.split(":")[1].strip(" %"))

    assert coverage(plain) < 5.0  # 3.0 %: the graph's 421 kernels have no operator
    assert coverage(merged) > coverage(plain) + 10


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
    assert prepared["categories"]


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
