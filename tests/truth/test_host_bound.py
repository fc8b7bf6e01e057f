"""Host-bound training, ~80 % of the window idle between iterations (`HOST_BOUND` of
analyzers/synthetic/host.py).

By hand: each 10 ms step keeps the GPU busy 1.785 ms (a 30 µs copy, then 39 kernels of 45 µs
back to back), starting 9.018 ms in (the data loader holds the host 9 ms; launch 8 µs into
the op, 10 µs latency). Between two steps the GPU idles 10 − 1.785 = 8.215 ms: 4 × 8.215 =
32.86 ms. The window runs from the first copy (9.018 ms) to the end of the evaluation kernel
launched 2 ms after the loop (50 + 2 + 0.018 + 0.045 = 52.063 ms): 43.045 ms, of which
34.075 ms idle (79.2 %; the 1.215 ms before the evaluation kernel are the window's edge).

Each gap is the data loader's: it opens 0.803 ms into loading, whose `__next__` lasts 8.95
ms, so 8.147 ms of each gap lie inside it (4 × 8.147 = 32.588 ms); the last 68 µs are the
host reaching the copy (49 µs with nothing recorded, 19 µs of the copy's operator).

Answer: P1 is the GPU waiting for the data loader, named by its `__next__`. Replayed
(docs/what-if.md#priorities-from-the-replay), the steps are done 10 ms apart; without the
loader's host code each one is paced by its 1.785 ms of GPU work: 8.215 ms a step sooner,
41.075 ms over the five. A fix wins back 50 / 75 / 100 % of that (a loader moved to worker
processes hides all of it when it is faster than the step), never more than the 32.588 ms of
idle the loader holds.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.synthetic.host import (
    HOST_BOUND,
    LAUNCH_LATENCY_US,
    OP_LAUNCH_AT_US,
    write_host_bound_trace,
)
from tests.helpers.truth import assert_truthful, ranked

P = HOST_BOUND
START_US = P.load_us + OP_LAUNCH_AT_US + LAUNCH_LATENCY_US  # the first copy, from BASE
END_US = P.steps * P.period_us + P.tail_us + START_US - P.load_us + P.kernel_us
WINDOW_MS = (END_US - START_US) / 1000
BETWEEN_MS = (P.steps - 1) * (P.period_us - P.gpu_us) / 1000
# the loader's annotation ends 50 µs before the copy's operator, which starts its copy 18 µs in
LOADER_MS = (
    (P.steps - 1) * (P.period_us - P.gpu_us - 50.0 - OP_LAUNCH_AT_US - LAUNCH_LATENCY_US) / 1000
)


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    trace = write_host_bound_trace(tmp_path_factory.mktemp("truth") / "host_bound.json.gz")
    return ranked(trace, "H100_SXM")


def test_the_hand_figures() -> None:
    assert pytest.approx((43.045, 32.86, 32.588)) == (WINDOW_MS, BETWEEN_MS, LOADER_MS)


def test_p1_is_the_data_loader(steps) -> None:
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle")
    assert top.title.startswith(
        "The GPU sat idle waiting for the next batch from the data loader (most in "
        "`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`): 32.6 ms"
    )
    per_step = (P.period_us - P.gpu_us) / 1000  # a step paced by its GPU work
    removal = P.steps * per_step
    assert removal == pytest.approx(41.075)
    assert top.saving.range_ms == pytest.approx(
        tuple(min(f * removal, LOADER_MS) for f in (0.5, 0.75, 1.0)), abs=1e-6
    )
    assert top.saving.cap_ms == pytest.approx(LOADER_MS, abs=1e-6)
    assert top.percent_mid == pytest.approx(0.75 * removal / WINDOW_MS * 100, abs=0.01)
    assert top.replay is not None and top.replay.on_path
    assert top.replay.step_ms == pytest.approx(P.period_us / 1000, abs=1e-3)
    assert top.replay.predicted_step_ms == pytest.approx(
        P.period_us / 1000 - 0.75 * per_step, abs=1e-3
    )


def test_the_window_is_mostly_idle(steps) -> None:
    gpu = steps.category_data().tables.manifest.gpu_utilization
    assert gpu.total_time_ms == pytest.approx(WINDOW_MS, abs=1e-6)
    assert gpu.idle_time_percent == pytest.approx(34.075 / WINDOW_MS * 100, abs=1e-6)


def test_no_share_over_100_and_no_estimate_without_a_roofline(steps) -> None:
    """The kernels' operators were recorded without shapes: their items are unquantified,
    ranked after every quantified one."""
    assert_truthful(steps)
    items = steps.priorities().items
    assert all(i.kind == "system" for i in items if i.estimate_method == "quantified")
