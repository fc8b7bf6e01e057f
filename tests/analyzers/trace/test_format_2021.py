"""Traces in the layout Kineto wrote in 2021 (PyTorch 1.8-1.10) are read and analysed.

The layout, as in the public traces of that time: categories `Operator`, `Runtime`,
`Kernel`, `Memcpy`; thread ids as strings (`"tid": "24572"` on the host, `"tid": "stream 7"`
on the GPU) while the flow start carries the same thread as a number; flows in category
`async` named `launch`; `correlation` and a lower-case `external id` in the args of runtime
calls and GPU events; `ProfilerStep#N` recorded as an operator; times in whole microseconds,
so sub-microsecond kernels have `"dur": 0`. Three such traces used to stop
`rooflens analyze` with a broadcast error in launch_bound.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.cli.main import main

PID, HOST_TID, STREAM = 24572, "24572", "stream 7"
T0 = 1_621_401_187_223_000  # µs since the epoch, as Kineto wrote them
KERNELS = 60
FIRST_CORRELATION = 300


def _x(cat: str, name: str, pid: Any, tid: Any, ts: int, dur: int, **args: Any) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def _launch(events: list, ext: int, corr: int, at: int, gpu: tuple[str, str, int, int]) -> None:
    """A runtime call at `at`, its `async` flow pair and the GPU event (cat, name, ts, dur)."""
    cat, name, ts, dur = gpu
    call = "cudaLaunchKernel" if cat == "Kernel" else "cudaMemcpyAsync"
    ids = {"correlation": corr, "external id": ext}
    events.append(_x("Runtime", call, PID, HOST_TID, at, 5, cbid=211, **ids, **{"external ts": at}))
    events.append({"ph": "s", "id": corr, "pid": PID, "tid": PID, "ts": at, "cat": "async",
                   "name": "launch"})  # fmt: skip
    gpu_args: dict[str, Any] = {"device": 0, "context": 1, "stream": 7, **ids}
    if cat == "Kernel":
        gpu_args.update({"queued": 0, "grid": [1, 1, 1], "block": [64, 1, 1]})
    else:
        gpu_args.update({"bytes": 640, "memory bandwidth (GB/s)": 0.5})
    events.append(_x(cat, name, 0, STREAM, ts, dur, **gpu_args))
    events.append({"ph": "f", "id": corr, "pid": 0, "tid": STREAM, "ts": ts, "cat": "async",
                   "name": "launch", "bp": "e"})  # fmt: skip


def _meta(kind: str, pid: Any, tid: Any, name: str) -> dict:
    return {"name": kind, "ph": "M", "ts": T0, "pid": pid, "tid": tid, "args": {"name": name}}


def kernel_dur(i: int) -> int:
    return 0 if i % 7 == 3 else 1  # every seventh kernel ran under a microsecond


def write_2021_trace(path: Path) -> Path:
    """One ProfilerStep: 60 elementwise ops 20 µs apart, each launching a 0-1 µs kernel 6 µs
    after its launch call, then a pageable host-to-device copy."""
    step = _x("Operator", "ProfilerStep#1", PID, HOST_TID, T0, 3000, **{"External id": 1})
    events: list[dict] = [step]
    t = T0 + 10
    for i in range(KERNELS):
        name = "aten::mul" if i % 2 else "aten::add_"
        events.append(
            _x("Operator", name, PID, HOST_TID, t, 12, Device=PID, **{"External id": 10 + i})
        )
        kernel = (
            "Kernel",
            "void at::native::vectorized_elementwise_kernel<4>",
            t + 9,
            kernel_dur(i),
        )
        _launch(events, 10 + i, FIRST_CORRELATION + i, t + 3, kernel)
        t += 20
    events.append(_x("Operator", "aten::copy_", PID, HOST_TID, t, 30, **{"External id": 200}))
    copy = ("Memcpy", "Memcpy HtoD (Pageable -> Device)", t + 20, 1)
    _launch(events, 200, FIRST_CORRELATION + KERNELS, t + 3, copy)
    events.append(_meta("process_name", PID, 0, "python"))
    events.append(_meta("thread_name", 0, STREAM, "stream 7 "))
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    return write_2021_trace(tmp_path / "resnet_2021.pt.trace.json")


def test_the_2021_spellings_load_as_the_modern_ones(trace: Path) -> None:
    loaded = load_trace(trace)
    ev = loaded.events
    counts = ev["cat"].value_counts()
    assert counts[["cpu_op", "cuda_runtime", "kernel", "gpu_memcpy"]].tolist() == [62, 61, 60, 1]
    gpu_tid = ev.loc[(ev["cat"] == "kernel").to_numpy(), "tid"].unique()
    assert [loaded.label(int(t)) for t in gpu_tid] == ["stream 7"]
    host_tid = ev.loc[(ev["cat"] == "cuda_runtime").to_numpy(), "tid"].unique()
    flow_tid = ev.loc[(ev["ph"] == "s").to_numpy(), "tid"].unique()
    assert host_tid.tolist() == flow_tid.tolist() == [PID]  # "24572" and 24572 are one thread


def test_every_launch_is_linked_to_its_kernel_and_operator(trace: Path) -> None:
    model = build_model(load_trace(trace))
    gpu = model.gpu
    assert len(gpu) == KERNELS + 1 and gpu["linked"].all()
    correlation = model.events["correlation"].to_numpy()
    launch = gpu["launch"].to_numpy()
    ids = correlation[gpu.index.to_numpy()]
    assert (correlation[launch] == ids).all()
    assert sorted(ids) == list(range(FIRST_CORRELATION, FIRST_CORRELATION + KERNELS + 1))
    launchers = model.names[gpu["launcher"].to_numpy()]
    expected = ["aten::add_" if i % 2 == 0 else "aten::mul" for i in range(KERNELS)]
    assert launchers.tolist() == [*expected, "aten::copy_"]
    assert assess(model).profiler_steps == [1]  # the step mark is an operator in 2021


@pytest.mark.slow
def test_analyze_exits_0_and_finds_the_launch_bound_step(
    trace: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "run"
    code = main(["analyze", str(trace), "--platform", "H100", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    host = json.loads((out / "category_data/cpu_idle_metrics.json").read_text())["host_side"]
    assert (host["iterations"]["method"], host["iterations"]["count"]) == ("profiler_step", 1)
    causes = {c["cause"]: c["idle_ms"] for c in host["idle_causes"]}
    # window: first kernel (T0 + 19) to the end of the copy (T0 + 1231), 1,212 µs; busy: the
    # 51 kernels of 1 µs and the 1 µs copy. Every gap is a prompt launch: one stretch.
    busy = sum(kernel_dur(i) for i in range(KERNELS)) + 1
    assert busy == 52
    assert causes["launch_bound"] == pytest.approx((1212 - busy) / 1e3)
    assert sum(causes.values()) == pytest.approx(causes["launch_bound"])
    shares = {c["cause"]: c["percent_of_idle"] for c in host["idle_causes"]}
    assert np.isclose(shares["launch_bound"], 100.0)
