"""The generated situations (analyzers/trace/synthetic_situations.py): every trace loads and
links with the loader, is byte-for-byte the same for a seed, and its planted answer holds
on the raw events. The figures are recomputed here from the JSON alone, with numpy and an
attribution of each idle instant written from synthetic_planted.py's definitions (not from
the plans' arithmetic)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rooflens.analyzers.trace.open_trace import open_trace
from rooflens.analyzers.trace.synthetic_planted import IDLE_CAUSES, Planted, Situation
from rooflens.analyzers.trace.synthetic_situations import SITUATIONS

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
HOST = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")
ALLOCATOR = {"cudaFree", "cudaMalloc", "hipFree", "hipMalloc", "cudaFreeAsync", "hipFreeAsync"}
SYNC_CALLS = {
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "hipStreamSynchronize",
    "hipDeviceSynchronize",
    "hipEventSynchronize",
}
SYNC_OPS = {"aten::item", "aten::_local_scalar_dense", "aten::nonzero"}
COLLECTIVE = {
    "record_param_comms",
    "aten::flatten_dense_tensors",
    "aten::unflatten_dense_tensors",
    "DistributedDataParallel.forward",
}
Event = dict[str, Any]


# --- intervals: (n, 2) float arrays of [start, end) --------------------------------------
def merge(iv: np.ndarray) -> np.ndarray:
    iv = np.asarray(iv, dtype=float).reshape(-1, 2)
    iv = iv[iv[:, 1] > iv[:, 0]]
    if not len(iv):
        return iv
    iv = iv[np.argsort(iv[:, 0], kind="stable")]
    ends = np.maximum.accumulate(iv[:, 1])
    new = np.r_[True, iv[1:, 0] > ends[:-1]]
    starts, last = iv[new, 0], np.r_[np.flatnonzero(new)[1:] - 1, len(iv) - 1]
    return np.c_[starts, ends[last]]


def _inside(iv: np.ndarray, x: np.ndarray) -> np.ndarray:
    i = np.searchsorted(iv[:, 0], x, side="right") - 1
    return (i >= 0) & (x < iv[np.maximum(i, 0), 1])


def intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sweep over every boundary of both sets: an elementary piece is kept when its middle
    lies in both."""
    a, b = merge(a), merge(b)
    if not len(a) or not len(b):
        return np.empty((0, 2))
    points = np.unique(np.r_[a.ravel(), b.ravel()])
    lo, hi = points[:-1], points[1:]
    mid = (lo + hi) / 2
    keep = _inside(a, mid) & _inside(b, mid)
    return merge(np.c_[lo[keep], hi[keep]])


def subtract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = merge(a), merge(b)
    if not len(a) or not len(b):
        return a
    lo, hi = min(a[0, 0], b[0, 0]) - 1, max(a[-1, 1], b[-1, 1]) + 1
    gaps = np.c_[np.r_[lo, b[:, 1]], np.r_[b[:, 0], hi]]
    return intersect(a, gaps)


def length(iv: np.ndarray) -> float:
    iv = merge(iv)
    return float((iv[:, 1] - iv[:, 0]).sum()) if len(iv) else 0.0


# --- the raw trace ------------------------------------------------------------------------
def raw(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)


def timed(doc: dict[str, Any], cats: tuple[str, ...]) -> list[Event]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in cats]


def span(events: list[Event]) -> np.ndarray:
    return np.array([[e["ts"], e["ts"] + e["dur"]] for e in events], dtype=float).reshape(-1, 2)


def steps(doc: dict[str, Any]) -> np.ndarray:
    marks = [
        e
        for e in timed(doc, ("user_annotation", "cpu_op"))
        if e["name"].startswith("ProfilerStep#")
    ]
    iv = span(marks)
    return iv[np.argsort(iv[:, 0])]


def gpu_idle(doc: dict[str, Any]) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """Idle intervals inside the GPU window, and the gaps between busy runs."""
    busy = merge(span(timed(doc, GPU)))
    gaps = list(zip(busy[:-1, 1], busy[1:, 0], strict=True))
    return np.array(gaps, dtype=float).reshape(-1, 2), gaps


def _queued_gaps(doc: dict[str, Any], gaps: list[tuple[float, float]]) -> np.ndarray:
    """Gaps whose ending GPU event was launched by a call that ended before the gap."""
    calls = {
        e["args"]["correlation"]: e
        for e in timed(doc, ("cuda_runtime", "cuda_driver"))
        if "correlation" in e.get("args", {})
    }
    first = {}
    for e in timed(doc, GPU):
        first.setdefault(e["ts"], e)
    out = []
    for a, b in gaps:
        call = calls.get(first[b].get("args", {}).get("correlation"))
        if call is not None and call["ts"] + call["dur"] <= a:
            out.append((a, b))
    return np.array(out, dtype=float).reshape(-1, 2)


def _launch_bound_gaps(doc: dict[str, Any], gaps: list[tuple[float, float]]) -> np.ndarray:
    """Gaps between two kernels each shorter than its own launch call."""
    calls = {
        e["args"]["correlation"]: e["dur"]
        for e in timed(doc, ("cuda_runtime",))
        if "correlation" in e.get("args", {})
    }
    short = {}
    for e in timed(doc, ("kernel",)):
        short[e["ts"]] = short[e["ts"] + e["dur"]] = e["dur"] < calls.get(
            e.get("args", {}).get("correlation"), 0.0
        )
    out = [(a, b) for a, b in gaps if short.get(a) and short.get(b)]
    return np.array(out, dtype=float).reshape(-1, 2)


def evidence(doc: dict[str, Any], cause: str, gaps: list[tuple[float, float]]) -> np.ndarray:
    """The host spans (or, for launch-bound, the gaps) that make an idle instant `cause`."""
    host = timed(doc, HOST)
    copies = {
        e["args"]["correlation"] for e in timed(doc, ("gpu_memcpy",)) if "Pageable" in e["name"]
    }

    def named(test) -> np.ndarray:
        return span([e for e in host if test(e)])

    if cause == "allocator":
        return named(lambda e: e["name"] in ALLOCATOR)
    if cause == "sync":
        return named(
            lambda e: (
                e["name"] in SYNC_CALLS | SYNC_OPS
                or ("Memcpy" in e["name"] and e.get("args", {}).get("correlation") in copies)
            )
        )
    if cause == "input_pipeline":
        return named(lambda e: e["name"].startswith("enumerate(DataLoader)#"))
    if cause == "collective_issue":
        return named(
            lambda e: (
                e["name"] in COLLECTIVE
                or e["name"].startswith(("nccl:", "c10d::", "_c10d_functional::"))
            )
        )
    if cause == "optimizer_step":
        return named(lambda e: e["name"].startswith(("Optimizer.step#", "Optimizer.zero_grad#")))
    if cause == "profiler":
        return named(lambda e: e["name"].startswith(("torch/profiler/", "[profiler]")))
    if cause == "launch_bound":
        return _launch_bound_gaps(doc, gaps)
    if cause == "dispatch":
        return named(lambda e: not e["name"].startswith("ProfilerStep#"))
    return np.empty((0, 2))


def attribute(doc: dict[str, Any], windows: np.ndarray) -> dict[str, float]:
    """{cause: ms} of GPU idle inside `windows`: a gap whose next event was already queued
    is gpu_wait whole; every other instant goes to the first cause whose evidence holds it."""
    idle, gaps = gpu_idle(doc)
    left = intersect(idle, windows)
    queued = intersect(left, _queued_gaps(doc, gaps))
    out = {"gpu_wait": length(queued)}
    left = subtract(left, queued)
    for cause in IDLE_CAUSES:
        if cause in ("gpu_wait", "warmup", "unexplained"):
            continue
        part = intersect(left, evidence(doc, cause, gaps))
        out[cause] = length(part)
        left = subtract(left, part)
    out["unexplained"] = length(left)
    return {k: v / 1e3 for k, v in out.items() if v}


# --- the checks ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("situations")
    return {name: s.write(folder / f"{name}.json", seed=0) for name, s in SITUATIONS.items()}


NAMES = sorted(SITUATIONS)


@pytest.mark.parametrize("name", NAMES)
def test_the_trace_loads_and_links(name: str, written: dict[str, Path]) -> None:
    doc, model = raw(written[name]), open_trace(written[name])
    gpu = timed(doc, GPU)
    assert len(model.gpu) == len(gpu) > 0
    assert int(model.gpu["linked"].sum()) == len(gpu)  # every event has its launch
    assert 300 <= len(doc["traceEvents"]) <= 6_000


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_bytes(name: str, tmp_path: Path) -> None:
    s: Situation = SITUATIONS[name]
    a = s.write(tmp_path / "a.json", seed=5).read_bytes()
    assert s.write(tmp_path / "b.json", seed=5).read_bytes() == a
    assert s.write(tmp_path / "c.json", seed=6).read_bytes() != a


@pytest.mark.parametrize("name", NAMES)
def test_the_planted_idle_holds_on_the_events(name: str, written: dict[str, Path]) -> None:
    planted: Planted = SITUATIONS[name].planted
    doc = raw(written[name])
    windows = steps(doc)
    if planted.step_ms:
        assert (windows[:, 1] - windows[:, 0]) / 1e3 == pytest.approx(planted.step_ms, abs=1e-6)
    steady = windows[list(planted.steady_iterations)]
    got = attribute(doc, steady)
    assert got == pytest.approx(dict(planted.idle_by_cause_ms), abs=1e-5)
    assert sum(got.values()) == pytest.approx(planted.idle_ms, abs=1e-5)
    if planted.p1 == "idle":
        assert planted.share(planted.cause) >= 0.9
        assert got.get("unexplained", 0.0) < 0.1 * planted.idle_ms
