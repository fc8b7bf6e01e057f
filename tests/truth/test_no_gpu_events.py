"""No GPU events: the host-bound trace (`HOST_BOUND`) with every GPU event and its flow
removed, what a profile without `ProfilerActivity.CUDA` records.

Answer: `analyze` refuses it (exit 2) with a message that says what is missing and how to
profile again, and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from rooflens.analyzers.synthetic.host import write_host_bound_trace
from rooflens.cli.main import main
from tests.helpers.sample_traces import read_document, write_document

GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def host_only(folder: Path) -> Path:
    document = read_document(write_host_bound_trace(folder / "host.json.gz"))
    document["traceEvents"] = [
        e
        for e in document["traceEvents"]
        if e.get("cat") not in GPU_CATEGORIES and e.get("ph") != "f"
    ]
    return write_document(document, folder / "no_gpu.json.gz")


def test_analyze_refuses_and_writes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(["analyze", str(host_only(tmp_path)), "--platform", "H100_SXM", "--out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert "no_gpu.json.gz cannot be analysed: the trace holds no GPU events" in err
    assert "ProfilerActivity.CUDA" in err
    assert not out.exists()
