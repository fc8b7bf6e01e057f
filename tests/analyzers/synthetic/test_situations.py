"""The generated situations (analyzers/synthetic/situations.py): every trace loads and
links with the loader, is byte-for-byte the same for a seed, and its planted answer holds
on the raw events. The figures are recomputed here from the JSON alone, with numpy and an
attribution of each idle instant written from synthetic/planted.py's definitions (not from
the plans' arithmetic)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rooflens.analyzers.synthetic.planted import IDLE_CAUSES, Planted, Situation
from rooflens.analyzers.synthetic.situations import SITUATIONS
from rooflens.analyzers.trace.open_trace import open_trace

GPU = ("kernel", "gpu_memcpy", "gpu_memset")
HOST = ("cpu_op", "user_annotation", "python_function", "cuda_runtime", "cuda_driver")
RUNTIME = ("cuda_runtime", "cuda_driver")
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
OLD = {
    "Operator": "cpu_op",
    "Kernel": "kernel",
    "Runtime": "cuda_runtime",
    "Memcpy": "gpu_memcpy",
    "Memset": "gpu_memset",
}


def raw(path: Path) -> dict[str, Any]:
    """The trace's JSON, 2021 category spellings read as today's."""
    data = path.read_bytes()
    doc = json.loads(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    for event in doc["traceEvents"]:
        if event.get("cat") in OLD:
            event["cat"] = OLD[event["cat"]]
    return doc


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
    assert len(model.gpu) == len(gpu) > 0 or SITUATIONS[name].planted.p1 == "nothing"
    assert int(model.gpu["linked"].sum()) == len(gpu)  # every event has its launch
    assert len(doc["traceEvents"]) <= 7_000


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


# --- what each situation plants beyond the idle split ----------------------------------------
def _doc(written: dict[str, Path], name: str) -> dict[str, Any]:
    return raw(written[name])


def _calls(doc: dict[str, Any]) -> dict[int, Event]:
    return {
        e["args"]["correlation"]: e
        for e in timed(doc, ("cuda_runtime", "cuda_driver"))
        if "correlation" in e.get("args", {})
    }


def _within(events: list[Event], windows: np.ndarray) -> list[Event]:
    return [e for e in events if any(a <= e["ts"] < b for a, b in windows)]


def _queue_depths(doc: dict[str, Any], windows: np.ndarray) -> np.ndarray:
    """At each launch call in `windows`: kernels launched earlier that have not started."""
    calls, gpu = _calls(doc), timed(doc, GPU)
    launch = np.sort([calls[e["args"]["correlation"]]["ts"] for e in gpu])
    start = np.sort([e["ts"] for e in gpu])
    at = np.array([c["ts"] for c in _within(list(calls.values()), windows)])
    return np.searchsorted(launch, at, side="left") - np.searchsorted(start, at, side="right")


def _delays(doc: dict[str, Any], windows: np.ndarray) -> np.ndarray:
    calls = _calls(doc)
    return np.array(
        [
            e["ts"] - calls[e["args"]["correlation"]]["ts"]
            for e in timed(doc, GPU)
            if any(a <= calls[e["args"]["correlation"]]["ts"] < b for a, b in windows)
        ]
    )


@pytest.mark.parametrize("name", ["allocator_churn", "allocator_churn_cuda"])
def test_allocator_churn_frees_every_backward_and_slows_down(name, written) -> None:
    doc = _doc(written, name)
    free = "hipFree" if name == "allocator_churn" else "cudaFree"
    per_step = []
    for a, b in steps(doc):
        calls = _within(timed(doc, ("cuda_runtime",)), np.array([[a, b]]))
        frees = [c["dur"] for c in calls if c["name"] == free]
        mallocs = [c for c in calls if c["name"] == free.replace("Free", "Malloc")]
        assert (len(frees), len(mallocs)) == (18, 16)
        per_step.append(np.median(frees))
    idle = intersect(gpu_idle(doc)[0], steps(doc))
    frees = span([e for e in timed(doc, ("cuda_runtime",)) if e["name"] in ALLOCATOR])
    assert length(intersect(idle, frees)) / length(idle) > 0.99
    assert per_step[2] / per_step[1] > 9.0  # from the third iteration on
    assert np.all(np.diff(steps(doc)[:, 1] - steps(doc)[:, 0])[1:] >= 0)  # growing


def test_loaders_gaps_and_stalls(written) -> None:
    single = _doc(written, "single_process_loader")
    loads = [e["dur"] for e in timed(single, ("user_annotation",)) if "DataLoader" in e["name"]]
    assert min(loads) >= 48_000 and max(loads) <= 62_000 and len(loads) == 6
    stalls = _doc(written, "loader_stalls")
    loads = [e["dur"] for e in timed(stalls, ("user_annotation",)) if "DataLoader" in e["name"]]
    long = np.flatnonzero(np.array(loads) > 1_000)
    assert set(np.diff(long)) <= {3, 4} and long[0] in (2, 3)
    assert all(500_000 <= loads[k] <= 800_000 for k in long)


def test_ddp_flatten_and_unflatten_hold_their_share(written) -> None:
    doc, plan = _doc(written, "ddp_buffer_broadcast"), SITUATIONS["ddp_buffer_broadcast"].plan
    idle = intersect(gpu_idle(doc)[0], steps(doc)[1:])
    ops = [e for e in timed(doc, ("cpu_op",)) if e["name"].endswith("flatten_dense_tensors")]
    got = length(intersect(idle, span(ops))) / (len(steps(doc)) - 1)
    assert got == pytest.approx(plan.flatten_unflatten_idle_us, abs=1e-3)
    assert {e["name"] for e in timed(doc, GPU)} >= {
        "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    }


def test_tiny_all_reduces_are_many_and_never_overlapped(written) -> None:
    doc = _doc(written, "tiny_all_reduces")
    gpu = timed(doc, GPU)
    comm = [e for e in gpu if e["name"].startswith("ncclDevKernel_AllReduce")]
    compute = [e for e in gpu if not e["name"].startswith("nccl")]
    for a, b in steps(doc):
        assert len([e for e in comm if a <= e["ts"] < b]) == 80
    assert length(intersect(span(comm), span(compute))) == 0.0


def test_launch_bound_kernels_are_shorter_than_their_launches(written) -> None:
    doc = _doc(written, "launch_bound_mlp")
    kernels = [e["dur"] for e in timed(doc, ("kernel",))]
    launches = [e["dur"] for e in timed(doc, ("cuda_runtime",)) if e["name"] == "cudaLaunchKernel"]
    assert (np.median(kernels), np.median(launches)) == (9.0, 17.0)
    assert _queue_depths(doc, steps(doc)).max() <= 1


def test_gpu_side_wait_with_a_deep_queue_and_a_blocked_host(written) -> None:
    doc, plan = _doc(written, "gpu_side_wait"), SITUATIONS["gpu_side_wait"].plan
    steady = steps(doc)[1:]
    assert np.median(_delays(doc, steady)) == pytest.approx(np.median(plan.delays_us()))
    assert np.median(_delays(doc, steady)) > 150_000
    assert _queue_depths(doc, steady).max() >= 100
    copies = [e for e in timed(doc, ("cuda_runtime",)) if e["name"] == "cudaMemcpyAsync"]
    dtoh = [
        e for e in timed(doc, ("gpu_memcpy",)) if e["name"] == "Memcpy DtoH (Device -> Pageable)"
    ]
    assert {e["args"]["bytes"] for e in dtoh} == {704}
    for a, b in gpu_idle(doc)[1]:
        if b - a > 1_000 and a >= steady[0, 0]:  # the 64 ms waits: the host is blocked all along
            assert b - a == pytest.approx(64_000.0)
            assert length(intersect(np.array([[a, b]]), span(copies))) == pytest.approx(b - a)
            assert any(c["ts"] < a and c["ts"] + c["dur"] > b for c in copies)  # resumes first
    sync = [e for e in timed(doc, ("cuda_runtime",)) if e["name"] == "cudaDeviceSynchronize"]
    assert len(sync) == 1 and sync[0]["ts"] >= steps(doc)[-1, 1]
    assert sync[0]["dur"] == pytest.approx(101_038.0)
    assert length(intersect(gpu_idle(doc)[0], span(sync))) == 0.0


def test_warmup_is_almost_all_the_window(written) -> None:
    doc = _doc(written, "warmup_in_window")
    marks = steps(doc)
    assert (marks[0, 1] - marks[0, 0]) / (marks[-1, 1] - marks[0, 0]) > 0.98
    free = [e for e in timed(doc, ("cuda_runtime",)) if e["name"] == "cudaFree"]
    conv = next(e for e in timed(doc, ("cpu_op",)) if e["name"] == "aten::cudnn_convolution")
    assert len(free) == 1 and free[0]["dur"] == 10_000_000.0
    assert (
        conv["ts"] <= free[0]["ts"] and free[0]["ts"] + free[0]["dur"] <= conv["ts"] + conv["dur"]
    )
    idle = length(intersect(gpu_idle(doc)[0], marks[1:]))
    assert idle / length(marks[1:]) < 0.002  # steady iterations: 99.9 % busy


def test_one_tiny_kernel_and_a_stray_step(written) -> None:
    doc = _doc(written, "one_tiny_kernel")
    (kernel,) = timed(doc, GPU)
    (stray,) = [e for e in timed(doc, ("user_annotation",)) if e["name"].startswith("ProfilerStep")]
    launch_tids = {e["tid"] for e in timed(doc, ("cuda_runtime", "cuda_driver"))}
    assert kernel["dur"] == 1.76 and stray["tid"] not in launch_tids
    rest = span([e for e in timed(doc, HOST) if e is not stray])
    assert stray["dur"] > 1_000 * (rest[:, 1].max() - rest[:, 0].min())


def test_fp32_bound_is_busy_with_a_full_queue(written) -> None:
    doc, plan = _doc(written, "gpu_bound_fp32"), SITUATIONS["gpu_bound_fp32"].plan
    steady = steps(doc)[1:]
    busy = 1 - length(intersect(gpu_idle(doc)[0], steady)) / length(steady)
    assert busy == pytest.approx(0.984, abs=5e-4)
    assert _queue_depths(doc, steady).min() == plan.queue_limit
    assert all("Input Dims" not in e.get("args", {}) for e in timed(doc, ("cpu_op",)))
    names = {e["name"] for e in timed(doc, ("kernel",))}
    assert all("float" in n or "sgemm" in n or "scudnn" in n for n in names)


def test_compiled_regions_own_95_percent_of_the_dtod_copies(written) -> None:
    doc = _doc(written, "compiled_dtod_copies")
    calls = _calls(doc)
    regions = [e for e in timed(doc, ("cpu_op",)) if e["name"].startswith("CompiledFunction")]
    copies = [e for e in timed(doc, ("gpu_memcpy",)) if e["name"].startswith("Memcpy DtoD")]

    def compiled(copy: Event) -> bool:
        call = calls[copy["args"]["correlation"]]
        return any(
            r["tid"] == call["tid"] and r["ts"] <= call["ts"] <= r["ts"] + r["dur"] for r in regions
        )

    total = sum(e["dur"] for e in copies)
    assert total / 1e3 == pytest.approx(92.97)
    assert sum(e["dur"] for e in copies if compiled(e)) / total == pytest.approx(0.95, abs=1e-3)


def test_filtered_old_and_counters_formats(written) -> None:
    filtered = _doc(written, "filtered_host_side")
    launched = {e["args"]["correlation"] for e in timed(filtered, GPU)}
    assert all(e["args"]["correlation"] in launched for e in timed(filtered, RUNTIME))
    assert "deviceProperties" not in filtered
    assert not {e["name"] for e in timed(filtered, RUNTIME)} & (ALLOCATOR | SYNC_CALLS)
    old = json.loads(written["format_2021"].read_bytes())["traceEvents"]
    assert {e["cat"] for e in old if "cat" in e} == {"Operator", "Runtime", "Kernel"}
    assert all(isinstance(e["tid"], str) for e in old) and not [e for e in old if e["ph"] in "sf"]
    counters = _doc(written, "counters_only")
    ranges = [e for e in counters["traceEvents"] if e.get("cat") == "cuda_profiler_range"]
    flops = sum(v * (2 if "fma" in k else 1) for e in ranges for k, v in e["args"].items())
    assert len(ranges) == 18 and not timed(counters, GPU)
    assert flops == sum(SITUATIONS["counters_only"].plan.flops.values())
