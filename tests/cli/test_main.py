"""`rooflens inspect`: the table, the JSON shape of the issue, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.trace.timeline import ROWS
from rooflens.cli.main import main

TRACE = {
    "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
    "traceEvents": [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::mm",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 20,
            "args": {"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaLaunchKernel",
            "pid": 1,
            "tid": 1,
            "ts": 5,
            "dur": 4,
            "args": {"correlation": 7},
        },
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 1, "tid": 1, "ts": 5},
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 7, "pid": 0, "tid": 7, "ts": 30},
        {
            "ph": "X",
            "cat": "kernel",
            "name": "gemm_kernel",
            "pid": 0,
            "tid": 7,
            "ts": 30,
            "dur": 10,
            "args": {"correlation": 7, "device": 0, "stream": 7},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclAllReduce",
            "pid": 0,
            "tid": 7,
            "ts": 50,
            "dur": 10,
            "args": {"correlation": 99, "device": 0, "stream": 7},
        },
    ],
}


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TRACE))
    return path


def test_inspect_json_has_the_eight_rows_per_device_and_health(trace_file, capsys) -> None:
    assert main(["inspect", str(trace_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["gpu_timeline"]
    assert [r["type"] for r in rows] == list(ROWS)
    assert set(rows[0]) == {"type", "time ms", "percent"}
    # one linked 10 µs kernel: the unlinked NCCL kernel is left out but counted
    assert rows[0] == {"type": "computation_time", "time ms": 0.01, "percent": 100.0}
    assert out["per_device"][0]["device"] == 0
    assert out["per_device"][0]["gpu_timeline"] == rows
    assert out["health"]["linking"]["unlinked"] == 1
    assert out["health"]["gpu"]["suggested_platform"] == "H100_SXM"


def test_inspect_include_unlinked_counts_every_gpu_event(trace_file, capsys) -> None:
    assert main(["inspect", str(trace_file), "--json", "--include-unlinked"]) == 0
    rows = {r["type"]: r for r in json.loads(capsys.readouterr().out)["gpu_timeline"]}
    assert rows["total_time"]["time ms"] == pytest.approx(0.030)
    assert rows["exposed_comm_time"]["time ms"] == pytest.approx(0.010)
    assert rows["idle_time"]["percent"] == pytest.approx(100 / 3)


def test_inspect_table_names_the_gpu_and_the_rows(trace_file, capsys) -> None:
    assert main(["inspect", str(trace_file)]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H100 80GB HBM3" in out
    assert "computation_time" in out and "total_memcpy_time" in out
    assert "1 GPU events" in out  # the unlinked-kernel warning


def test_inspect_bad_file_exits_2_with_the_reason(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "broken.json.gz"
    bad.write_bytes(b"not gzip at all")
    assert main(["inspect", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "broken.json.gz" in err and "not gzip-compressed" in err
