"""The Python API as the documentation shows it: the README's three lines run as written (on a
generated trace), and docs/python-api.ipynb executes in a real kernel and shows a DataFrame,
the priorities and the plot. The kernel talks over IPC sockets in the test's own folder: no
TCP listener another process could use."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from rooflens.analyzers.synthetic.situations import SITUATIONS

pytestmark = pytest.mark.slow  # a notebook kernel and a CLI subprocess

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "python-api.ipynb"


def _readme_python() -> str:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Python", 1)[1]
    found = re.search(r"```python\n(.*?)\n```", section, re.DOTALL)
    assert found, "the README's Python section holds a python block"
    return found.group(1)


def test_the_readmes_three_lines_work(tmp_path: Path) -> None:
    code = _readme_python()
    assert len([line for line in code.splitlines() if line]) == 3
    assert "path/to/trace.json.gz" in code
    trace = SITUATIONS["allocator_churn_cuda"].write(tmp_path / "trace.json.gz")
    script = code.replace("path/to/trace.json.gz", trace.as_posix())
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.startswith("The GPU sat idle while the host freed and allocated memory")
    assert "`cudaFree`" in out.stdout
    assert not any(tmp_path.glob("*/run.json"))  # nothing written


def _outputs(cell) -> dict[str, str]:
    """mime type (or "stream") -> the cell's output of that kind, joined."""
    found: dict[str, str] = {}
    for output in cell.outputs:
        if output.output_type == "stream":
            found["stream"] = found.get("stream", "") + output.text
        for mime, data in output.get("data", {}).items():
            found[mime] = found.get(mime, "") + (data if isinstance(data, str) else "")
    return found


def test_the_notebook_runs_and_shows_a_table_the_priorities_and_the_plot(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")
    # the sockets' paths are absolute: the kernel runs in tmp_path, the test elsewhere
    ipc = str(tmp_path / "kernel-ipc")
    manager = KernelManager(kernel_name="python3", transport="ipc", ip=ipc)
    client = NotebookClient(
        notebook, km=manager, timeout=300, resources={"metadata": {"path": str(tmp_path)}}
    )
    try:
        client.execute()
    finally:  # a kernel the test started is the test's to stop
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
    cells = [_outputs(c) for c in notebook.cells if c.cell_type == "code"]
    assert not any("error" in c for c in cells)
    run_cell = next(c for c in cells if "Run('allocator_churn.json.gz'" in c.get("text/plain", ""))
    assert "<td>P1</td>" in run_cell["text/html"]
    table = next(c for c in cells if "Kernel Time (µs)_sum" in c.get("text/html", ""))
    assert "<table" in table["text/html"] and "aten::convolution_backward" in table["text/html"]
    ranked = next(c["stream"] for c in cells if "stream" in c)
    assert ranked.startswith("P1 system") and "`cudaFree`" in ranked
    assert any("image/png" in c for c in cells)  # the plot
    saved = tmp_path / "allocator_churn_run"
    assert (saved / "analysis.md").is_file() and (saved / "run.json").is_file()
