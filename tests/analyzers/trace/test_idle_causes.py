"""GPU idle split into causes: planted answers from synthetic/host.py and hand-built corner
cases (tests/golden/test_idle_causes.py: the parts add up on shared traces too).

Planted figures are worked out from the plan constants (exact timing); compared to 1 ns.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.synthetic.host import (
    write_blocking_item_trace,
    write_host_bound_trace,
    write_launch_bound_trace,
)
from rooflens.analyzers.trace.host_blocking import ASYNC_COPIES, SYNC_CALLS, SYNC_COPIES
from rooflens.analyzers.trace.idle_causes import idle_causes
from rooflens.analyzers.trace.launch_bound import MIN_STRETCH_EVENTS
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.idle_checks import assert_parts_sum_to_timeline_idle

NS = 1e-6  # ms


def _split(writer, tmp_path, marked=True):
    model = build_model(load_trace(writer(tmp_path / "t.json.gz", profiler_steps=marked)))
    return model, idle_causes(model)


def _ms(result) -> dict[str, float]:
    """The causes that hold idle time (the rest are 0)."""
    return {p.cause: p.idle_ms for p in result.parts if p.idle_ms > 0}


def _all(result) -> dict[str, float]:
    return {p.cause: p.idle_ms for p in result.parts}


# --- planted traces --------------------------------------------------------------------------


@pytest.mark.parametrize("marked", [True, False])
def test_host_bound_idle_is_named_the_data_loader(tmp_path, marked):
    model, result = _split(write_host_bound_trace, tmp_path, marked)
    assert_parts_sum_to_timeline_idle(model, result)
    # window: first copy (9.018 ms into step 0) to the evaluation kernel's end (52.063 ms)
    assert result.window_ms == pytest.approx(43.045, abs=NS)
    assert result.busy_ms == pytest.approx(5 * 1.785 + 0.045, abs=NS)
    # 4 gaps of 10 - 1.785 = 8.215 ms between steps. Each opens 0.803 ms into loading, which
    # lasts 8.95 ms: 8.147 ms inside `__next__`; then 49 µs with nothing recorded, 1 µs of
    # train_step's frame and the copy's aten::to, whose call starts 8 µs in and whose copy
    # starts 10 µs after that (19 µs of dispatch). After the loop the GPU idles 1.215 ms:
    # the evaluation op's 18 µs before its kernel, and 1.197 ms with nothing recorded
    assert _ms(result) == pytest.approx(
        {
            "input_pipeline": 4 * 8.147,
            "dispatch": 4 * 0.019 + 0.018,
            "unexplained": 4 * 0.049 + 1.197,
        },
        abs=NS,
    )
    assert result.idle_ms / result.window_ms == pytest.approx(0.7916, abs=1e-4)
    loader = result.part("input_pipeline")
    assert loader.percent_of_idle == pytest.approx(100 * 4 * 8.147 / 34.075)
    top = loader.culprits[0]
    assert top.name == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert (top.idle_ms, top.count) == (pytest.approx(4 * 8.147, abs=NS), 4)
    # steady state: the 5 steps; the evaluation kernel's gap is the tail, priced at nothing
    assert result.phases is not None and result.phases.steady == [0, 1, 2, 3, 4]
    assert result.idle_by_phase_ms["tail"] == pytest.approx(1.215, abs=NS)
    assert result.priced_ms("input_pipeline") == pytest.approx(4 * 8.147, abs=NS)
    assert result.priced_ms("unexplained") == pytest.approx(4 * 0.049, abs=NS)
    assert result.call_sites == [] and result.stretches == []


@pytest.mark.parametrize("marked", [True, False])
def test_blocking_item_names_the_sync_under_the_router_module(tmp_path, marked):
    model, result = _split(write_blocking_item_trace, tmp_path, marked)
    assert_parts_sum_to_timeline_idle(model, result)
    # per step: the first .item() waits 2.414 ms for burst A, the GPU then idles 0.427 ms
    # until burst B (all charged: less than the wait); the second waits 0.214 ms and the
    # gap after it is 1.027 ms, of which 0.214 ms is charged (the queue it found) and
    # 0.813 ms is train_step's own Python; the two gaps between steps (0.54 ms each) too
    assert _ms(result) == pytest.approx(
        {"sync": 3 * (0.427 + 0.214), "dispatch": 3 * 0.813 + 2 * 0.54}, abs=NS
    )
    assert result.blocking_calls == 6
    first, second = result.call_sites
    assert first.call == "cudaStreamSynchronize"
    assert first.operator == "aten::item"
    assert first.op_chain == "aten::item > aten::_local_scalar_dense"
    assert first.module == "Router"
    assert first.frame == "model.py(88): forward"
    assert first.count == 3
    assert first.wait_ms == pytest.approx(3 * 2.414, abs=NS)
    # what the host-blocking analysis charges each call (its own, narrower rule)
    assert first.idle_ms == pytest.approx(3 * 0.427, abs=NS)
    assert (second.module, second.frame) == ("", "train.py(61): log_metrics")
    assert second.wait_ms == pytest.approx(3 * 0.214, abs=NS)
    assert second.idle_ms == pytest.approx(3 * 0.214, abs=NS)
    assert first.idle_ms + second.idle_ms == pytest.approx(result.part("sync").idle_ms, abs=NS)
    assert result.part("dispatch").culprits[0].name == "train.py(55): train_step"


@pytest.mark.parametrize("marked", [True, False])
def test_launch_bound_gaps_are_launch_bound(tmp_path, marked):
    model, result = _split(write_launch_bound_trace, tmp_path, marked)
    assert_parts_sum_to_timeline_idle(model, result)
    # 1501 kernels of 4 µs launched 20 µs apart per step: 1500 gaps of 16 µs each; the
    # next step's first kernel comes 0.996 ms after the last one: its op's 11 µs before its
    # launch call and the call's 6 µs are dispatch, the 0.979 ms before it nothing recorded
    assert _ms(result) == pytest.approx(
        {"launch_bound": 2 * 1500 * 0.016, "dispatch": 0.017, "unexplained": 0.979}, abs=NS
    )
    assert [(s.events, s.median_event_us, s.median_gap_us) for s in result.stretches] == [
        (1501, 4.0, 16.0),
        (1501, 4.0, 16.0),
    ]
    assert [s.start_ms for s in result.stretches] == pytest.approx([0.0, 31.0], abs=NS)
    assert result.queue is not None and result.queue.median_depth == 1.0


# --- corner cases, hand-built ----------------------------------------------------------------


def _sync(tb, name, ts, dur, op=None):
    events = [tb.runtime(name, ts, dur)]
    if op:
        events.append(tb.cpu_op(op, ts - 1, dur + 2))
    return events


def test_a_sync_entered_after_the_gpu_went_idle_is_charged_its_overlap_only(tb):
    events = [
        *tb.launch(1, 0.0, 5.0, 10.0),  # kernel [5, 15]
        *_sync(tb, "cudaDeviceSynchronize", 50.0, 100.0),  # [50, 150]: GPU already idle
        *tb.launch(2, 280.0, 300.0, 10.0),  # kernel [300, 310]
    ]
    result = idle_causes(tb.model(events))
    # gap [15, 300]: the sync holds [50, 150]; the launch call [280, 284] is dispatch; the
    # rest had nothing recorded
    assert _ms(result) == pytest.approx(
        {"sync": 0.1, "dispatch": 0.004, "unexplained": 0.285 - 0.104}
    )
    assert result.call_sites[0].call == "cudaDeviceSynchronize"
    assert result.call_sites[0].operator == ""


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("cudaStreamSynchronize", "sync"),
        ("hipDeviceSynchronize", "sync"),
        ("cudaEventSynchronize", "sync"),
        ("cuCtxSynchronize", "sync"),
        ("cudaMemcpy", "copy"),
        ("hipMemcpyDtoH", "copy"),
        ("hipMemcpyWithStream", "copy"),
        ("cuMemcpyDtoH_v2", "copy"),
        ("cudaMemcpyAsync", "async"),
        ("hipMemcpy2DAsync", "async"),
        ("cuMemcpyHtoDAsync_v2", "async"),
        ("cudaLaunchKernel", None),
        ("cudaStreamWaitEvent", None),
        ("cudaEventQuery", None),
    ],
)
def test_blocking_call_names(name, kind):
    found = {
        "sync": SYNC_CALLS.fullmatch(name),
        "copy": SYNC_COPIES.fullmatch(name),
        "async": ASYNC_COPIES.fullmatch(name),
    }
    assert [k for k, match in found.items() if match] == ([kind] if kind else [])


def test_a_waited_for_async_copy_blocks_and_a_queued_one_does_not(tb):
    waited = [  # the call returns after its copy lands: the host waited
        tb.runtime("cudaMemcpyAsync", 100.0, 60.0, 2),
        tb.flow("s", 2, 1, 1, 100.0),
        tb.flow("f", 2, 0, 7, 110.0),
        tb.kernel("Memcpy DtoH (Device -> Pageable)", 110.0, 40.0, 2, cat="gpu_memcpy"),
    ]
    events = [*tb.launch(1, 0.0, 5.0, 10.0), *waited, *tb.launch(3, 400.0, 410.0, 10.0)]
    result = idle_causes(tb.model(events))
    (site,) = result.call_sites
    assert (site.call, site.count, site.wait_ms) == ("cudaMemcpyAsync", 1, pytest.approx(0.06))
    # the call overlaps idle [100, 110] and [150, 160]; the gap from 150 opened inside it
    # after the GPU had been busy 40 µs of its wait: [160, 200] too. 60 µs, its whole wait
    assert _all(result)["sync"] == pytest.approx((10 + 10 + 40) / 1e3)
    queued = [  # returns at 106, the copy runs 110..150: nothing waited
        tb.runtime("cudaMemcpyAsync", 100.0, 6.0, 2),
        *waited[1:],
    ]
    result = idle_causes(tb.model([*tb.launch(1, 0.0, 5.0, 10.0), *queued]))
    assert result.call_sites == []


def test_item_on_a_cpu_tensor_is_not_blocking(tb):
    events = [
        *tb.launch(1, 0.0, 5.0, 10.0),
        tb.cpu_op("aten::item", 50.0, 20.0),
        tb.cpu_op("aten::_local_scalar_dense", 52.0, 10.0),
        *tb.launch(2, 280.0, 300.0, 10.0),
    ]
    result = idle_causes(tb.model(events))
    assert result.blocking_calls == 0
    # the op holds [50, 70] of the gap [15, 300]; its scalar read [52, 62] is the innermost
    assert _ms(result) == pytest.approx({"dispatch": 0.024, "unexplained": 0.261})
    # dispatch is grouped by operator: the op's own 10 µs and its scalar read's 10 µs
    sites = {(c.operator, c.count): c.idle_ms for c in result.part("dispatch").culprits}
    assert sites == pytest.approx({("aten::item", 2): 0.02, ("", 1): 0.004})


def _launches(tb, n, every, kernel_us, delay=10.0):
    events = []
    for i in range(n):
        ts = i * every
        events += tb.launch(i + 1, ts, ts + delay, kernel_us)
    return events


def test_a_stretch_needs_enough_short_promptly_started_kernels(tb):
    few = idle_causes(tb.model(_launches(tb, MIN_STRETCH_EVENTS - 1, 20.0, 4.0)))
    assert few.stretches == []
    enough = idle_causes(tb.model(_launches(tb, MIN_STRETCH_EVENTS, 20.0, 4.0)))
    assert [s.events for s in enough.stretches] == [MIN_STRETCH_EVENTS]
    assert _all(enough)["launch_bound"] == pytest.approx((MIN_STRETCH_EVENTS - 1) * 0.016)
    long_kernels = idle_causes(tb.model(_launches(tb, 40, 60.0, 50.0)))
    assert long_kernels.stretches == []  # median 50 µs: the kernels, not launches, dominate
    queued = idle_causes(tb.model(_launches(tb, 40, 20.0, 4.0, delay=80.0)))
    assert queued.stretches == []  # each started 80 µs after its launch: not prompt


def test_no_gpu_work_gives_an_empty_split(tb):
    result = idle_causes(tb.model([tb.cpu_op("aten::add", 0.0, 10.0)]))
    assert (result.window_ms, result.idle_ms) == (0.0, 0.0)
    assert all(p.idle_ms == 0 for p in result.parts)
