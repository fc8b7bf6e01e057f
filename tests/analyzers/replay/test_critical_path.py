"""The critical path of a replayed iteration, on generated steps whose bottleneck is planted
(analyzers/synthetic/what_if.py): the loader in front of a starved GPU, the GEMMs of a
GPU-bound step, the host of a host-bound one."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.replay.critical_path import CriticalPath, critical_path
from rooflens.analyzers.replay.graph import build_graph
from rooflens.analyzers.replay.simulate import map_time, replay
from rooflens.analyzers.replay.step_times import step_thread
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.idle import LOADER_NAMES
from rooflens.analyzers.synthetic.kernels import NV_GEMM
from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace
from rooflens.analyzers.trace.iterations import find_iterations


def _path_of_step(tmp_path: Path, plan: StepPlan, step: int = 4) -> CriticalPath:
    model, _ = read_trace(write_step_trace(tmp_path / "t.json.gz", plan))
    graph = build_graph(model)
    replayed = replay(graph)
    iterations = find_iterations(model)
    it = iterations.iterations[step]
    thread = step_thread(graph)
    begin, end = (
        map_time(graph, replayed, thread, iterations.origin_us + ms * 1e3)
        for ms in (it.host_start_ms, it.host_end_ms)
    )
    path = critical_path(model, graph, replayed, thread, begin, end)
    assert sum(s.us for s in path.segments) == pytest.approx(path.span_us, rel=1e-6)
    return path


def test_the_loader_in_front_of_a_starved_gpu_is_on_the_path(tmp_path: Path) -> None:
    path = _path_of_step(tmp_path, StepPlan(loader_us=20_000.0))
    kind, name, us, share = path.top(1)[0]
    assert (kind, name) == ("host_work", LOADER_NAMES[False])
    # a gap between two calls goes to what held its midpoint: the loader's 20 ms, and the 8 µs
    # of the first aten::mm before its launch call
    assert us == pytest.approx(20_008.0, abs=0.01) and share == pytest.approx(20 / 28.02, abs=0.01)
    assert path.by_kind()["gpu"] == pytest.approx(40 * 200.0, rel=0.01)  # then the GEMMs


def test_the_gemms_of_a_gpu_bound_step_are_the_path(tmp_path: Path) -> None:
    path = _path_of_step(tmp_path, StepPlan(sync=False, queue_limit=64))
    kind, name, _, share = path.top(1)[0]
    assert (kind, name) == ("gpu", NV_GEMM) and share > 0.99


def test_a_host_bound_step_has_no_kernel_on_its_path(tmp_path: Path) -> None:
    """5 µs GEMMs 30 µs apart: the last one ends before the synchronise is even called."""
    path = _path_of_step(tmp_path, StepPlan(kernel_us=5.0))
    kinds = path.by_kind()
    assert "gpu" not in kinds and "wait_return" not in kinds
    assert kinds["host_work"] + kinds["host_call"] == pytest.approx(path.span_us)


def test_the_step_marker_names_no_work(tmp_path: Path) -> None:
    """A step whose host idles 800 µs between a copy at its start and its one operator: the
    gap lies inside the `ProfilerStep#` marker and no operator, so it is host work outside
    operators, never work of the marker (the last annotation open there)."""
    import json

    from rooflens.analyzers.replay.what_if import what_if
    from rooflens.analyzers.trace.open_trace import open_trace

    def x(cat, name, ts, dur, tid=1, **args):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1,
                "tid": tid, "args": args}  # fmt: skip

    events = [
        x("user_annotation", "ProfilerStep#1", 0, 1000),
        x("cuda_runtime", "cudaMemcpyAsync", 1, 4, correlation=1),
        x(
            "gpu_memcpy",
            "Memcpy HtoD (Pinned -> Device)",
            10,
            5,
            tid=7,
            correlation=1,
            device=0,
            stream=7,
        ),
        x("cpu_op", "aten::mm", 800, 20),
        x("cuda_runtime", "cudaLaunchKernel", 805, 5, correlation=2),
        x("kernel", "gemm_kernel", 815, 100, tid=7, correlation=2, device=0, stream=7),
    ]
    path = tmp_path / "step.json"
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    names = {item.name for item in what_if(open_trace(path), []).critical_path}
    assert "(host work outside operators)" in names
    assert not any(name.startswith("ProfilerStep#") for name in names)
