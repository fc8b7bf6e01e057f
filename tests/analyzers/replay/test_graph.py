"""The replay graph on hand-placed events: what waited for what, and what it assumed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rooflens.analyzers.replay.graph import CannotReplay, build_graph
from rooflens.analyzers.replay.simulate import Changes, replay
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.devices import H100
from rooflens.analyzers.synthetic.kernels import NV_GEMM
from rooflens.analyzers.synthetic.writer import Writer


def _two_kernels_and_a_sync(tmp_path: Path) -> Path:
    """Two GEMMs launched 20 µs apart (the second queued behind the first), a device
    synchronise that returns 5 µs after the second ends, then a third launch 50 µs later."""
    w = Writer(device=H100, host_pid=10, main_tid=10)
    w.launching_op("aten::mm", NV_GEMM, 1000.0, 300.0)
    w.launching_op("aten::mm", NV_GEMM, 1020.0, 300.0)
    back = w.sync(1040.0)
    w.launching_op("aten::mm", NV_GEMM, back + 50.0, 100.0)
    return w.write(tmp_path / "t.json.gz", "hand")


def test_the_sync_waits_for_the_last_kernel_and_the_queue_holds_the_second(tmp_path: Path):
    model, _ = read_trace(_two_kernels_and_a_sync(tmp_path))
    graph = build_graph(model)
    host, gpu = graph.host, graph.gpu
    sync = int(np.flatnonzero(host.waits_for >= 0)[0])
    assert model.names[host.uid[sync]] == "cudaDeviceSynchronize"
    assert host.waits_for[sync] == 1 and host.residual[sync] == pytest.approx(5.0)
    assert list(gpu.stream_gap) == [0.0, 0.0, 0.0]  # the writer's GPU has no gap of its own
    assert gpu.start[1] == pytest.approx(gpu.start[0] + 300.0)  # queued behind the first
    # twice as fast GEMMs: the sync returns 300 µs sooner, and so does the third launch
    base = replay(graph)
    fast = replay(graph, Changes(gpu_scale=np.full(3, 0.5)))
    assert base.host_end[sync] == pytest.approx(host.start[sync] + host.dur[sync])
    assert base.host_end[sync] - fast.host_end[sync] == pytest.approx(300.0)
    assert base.gpu_start[2] - fast.gpu_start[2] == pytest.approx(300.0)


def test_a_trace_without_launch_links_cannot_be_replayed(tmp_path: Path) -> None:
    w = Writer(device=H100, host_pid=10, main_tid=10)
    w.launching_op("aten::mm", NV_GEMM, 1000.0, 300.0)
    document = w.document("hand")
    for event in document["traceEvents"]:
        event.get("args", {}).pop("correlation", None)
        event.get("args", {}).pop("External id", None)
    path = tmp_path / "unlinked.json"
    import json

    path.write_text(json.dumps(document))
    model, _ = read_trace(path)
    with pytest.raises(CannotReplay, match="linked to a launch"):
        build_graph(model)


def test_links_that_contradict_the_times_leave_the_path_finite(tmp_path: Path, monkeypatch):
    """Fuzz case 83 (flows broken, fields swapped): kernels linked to launches on other
    threads, later than the calls that wait for them. The walk back passes each call and
    event once; before, it went round that circle until memory ran out."""
    import json

    from devkit.badinput.corpus import sample_bytes
    from devkit.badinput.fuzz import ALL_MUTATIONS, write_case
    from devkit.badinput.mutations import Base
    from rooflens.analyzers.replay import critical_path as walk
    from rooflens.analyzers.replay.step_times import step_thread

    path, names = write_case(Base(json.loads(sample_bytes())), 83, tmp_path, ALL_MUTATIONS)
    assert names == ("break_flows", "swap_fields")
    model, _ = read_trace(path)
    graph = build_graph(model)
    replayed = replay(graph)
    bound = 2 * (len(graph.host.uid) + len(graph.gpu.uid))
    add = walk._Walk.add

    def bounded(self, *args):
        assert len(self.segments) <= bound, "the walk is going round in a circle"
        add(self, *args)

    monkeypatch.setattr(walk._Walk, "add", bounded)
    found = walk.critical_path(model, graph, replayed, step_thread(graph), -1e18, replayed.end)
    assert 0 < len(found.segments) <= bound


def _all_reduce_steps(tmp_path: Path, sync_events: bool) -> Path:
    from rooflens.analyzers.synthetic.what_if import StepPlan, write_step_trace

    plan = StepPlan(steps=4, kernels=40, allreduce_us=3_000.0, sync=False, queue_limit=64)
    return write_step_trace(tmp_path / "r.json.gz", replace(plan, sync_events=sync_events))


def test_recorded_stream_waits_are_read_from_cupti_sync_events(tmp_path: Path) -> None:
    """Each step: the all-reduce waits for the GEMMs' event, the optimizer for the
    all-reduce's; with the records both edges are the trace's own, none assumed."""
    model, _ = read_trace(_all_reduce_steps(tmp_path, sync_events=True))
    ev = model.recorded
    sync = ev["cat"].to_numpy() == "cuda_sync"
    assert sync.sum() == 8 and (ev["wait_record_corr"].to_numpy()[sync] > 0).all()
    assert set(ev["wait_on_stream"].to_numpy()[sync].tolist()) == {7, 21}
    graph = build_graph(model)
    gpu, names = graph.gpu, model.names[graph.gpu.uid].astype(str)
    waiting = np.flatnonzero(gpu.after >= 0)
    assert len(waiting) == 8 and gpu.recorded[waiting].all()
    pairs = {(names[i][:12], names[gpu.after[i]][:12]) for i in waiting.tolist()}
    assert pairs == {("ncclDevKerne", "sm90_xmma_ge"), ("multi_tensor", "ncclDevKerne")}
    assumed = graph.assumptions[0]
    assert assumed.rule.startswith("a late start right after") and assumed.events == 0


def test_without_records_the_same_waits_are_assumed(tmp_path: Path) -> None:
    model, _ = read_trace(_all_reduce_steps(tmp_path, sync_events=False))
    graph = build_graph(model)
    assert not graph.gpu.recorded.any()
    assert graph.assumptions[0].events == 8


def test_a_launch_into_a_full_queue_waits_for_the_slot_not_the_other_stream(tmp_path: Path):
    """The first GEMM launch of a step blocks until the optimizer kernel, held back by the
    all-reduce, starts and frees a slot: it waits for that kernel's start, not for the
    all-reduce that ended on the other stream at the same moment."""
    model, _ = read_trace(_all_reduce_steps(tmp_path, sync_events=False))
    graph = build_graph(model)
    host, names = graph.host, model.names[graph.gpu.uid].astype(str)
    by_slot = np.flatnonzero(host.waits_start)
    assert len(by_slot) == 2  # steps 3-4: the queue fills during step 2
    assert all(names[host.waits_for[i]].startswith("multi_tensor") for i in by_slot.tolist())
    waited = names[host.waits_for[host.waits_for >= 0]]
    assert not any(n.startswith("ncclDevKernel") for n in waited)


def test_stream_wait_records_that_name_nothing_are_left_out(tmp_path: Path) -> None:
    """A record naming a call the trace lacks, a stream with no events, text where an id
    belongs: each such wait is left to the timing rule, and the graph still builds."""
    import gzip
    import json

    path = _all_reduce_steps(tmp_path, sync_events=True)
    document = json.loads(gzip.decompress(path.read_bytes()))
    syncs = [e for e in document["traceEvents"] if e.get("cat") == "cuda_sync"]
    syncs[0]["args"]["wait_on_cuda_event_record_corr_id"] = 99_999_999
    syncs[1]["args"]["wait_on_stream"] = 12_345
    syncs[2]["args"]["wait_on_cuda_event_record_corr_id"] = "not an id"
    syncs[3]["args"] = ["not", "an", "object"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(document))
    model, _ = read_trace(broken)
    graph = build_graph(model)
    assert graph.gpu.recorded.sum() == 4
    assert (graph.gpu.after >= 0).sum() == 8  # the other four found by the timing rule
    assert graph.assumptions[0].events == 4
