"""A FIFO given as a platform file, a category table or a capture's execution_details.json is
refused at once, on the command line (exit 2, one error line) and over MCP (a ToolError),
instead of blocking the call forever (analyzers/trace/input_file.py)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import anyio
import pytest

from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.analyzers.trace.capture import DETAILS_FILE
from rooflens.cli.main import main
from tests.helpers.fifo import released_after
from tests.helpers.mcp_client import call, error_of

FIFO = "is a FIFO (named pipe), not a regular file"


@pytest.fixture
def beside(allowed: Path) -> Path:
    """The sample trace, with a capture_traces/ folder beside it whose sidecar is a FIFO."""
    trace = write_sample_trace(allowed / "t.json.gz")
    (allowed / "capture_traces").mkdir()
    shutil.copy(trace, allowed / "capture_traces" / "capture_0.json.gz")
    os.mkfifo(allowed / "capture_traces" / DETAILS_FILE)
    return trace


@pytest.mark.parametrize("option", ["--platform-file", "--categories"])
def test_the_cli_refuses_a_fifo_option_with_exit_2(beside: Path, option: str, capsys) -> None:
    fifo = beside.parent / "input.fifo"
    os.mkfifo(fifo)
    args = ["report", str(beside), "--platform", "MI300X", option, str(fifo), "--no-captures"]
    if option == "--platform-file":
        args.remove("--platform")
        args.remove("MI300X")
    with released_after(fifo) as dog:
        code = main([*args, "--out", str(beside.parent / "out")])
    assert not dog.fired
    assert code == 2
    assert capsys.readouterr().err.startswith(f"rooflens: {fifo}: {FIFO}.")


def test_the_cli_reads_no_fifo_sidecar(beside: Path, capsys) -> None:
    """Found beside the trace, an unusable capture folder is left out (the trace is still
    read); named with --capture-folder, it is refused."""
    sidecar = beside.parent / "capture_traces" / DETAILS_FILE
    with released_after(sidecar) as dog:
        found = main(["inspect", str(beside)])
        named = main(["inspect", str(beside), "--capture-folder", str(sidecar.parent)])
    assert not dog.fired
    assert (found, named) == (0, 2)
    assert f"rooflens: {sidecar}: {FIFO}." in capsys.readouterr().err


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto"])
async def test_load_trace_refuses_a_fifo_platform_file_or_sidecar(connect, beside: Path) -> None:
    fifo = beside.parent / "gpu.json"
    os.mkfifo(fifo)
    sidecar = beside.parent / "capture_traces" / DETAILS_FILE
    with released_after(fifo) as dog, released_after(sidecar) as dog2, anyio.fail_after(60):
        async with connect() as client:
            platform = await error_of(
                client, "load_trace", {"path": str(beside), "platform_file": str(fifo)}
            )
            named = await error_of(
                client, "load_trace", {"path": str(beside), "capture_folder": str(sidecar.parent)}
            )
            found = await call(client, "load_trace", {"path": str(beside)})
    assert not dog.fired and not dog2.fired
    assert f"{fifo}: {FIFO}" in platform
    assert f"{sidecar}: {FIFO}" in named
    assert found["run_id"].startswith("run-")
