"""An elementwise-bound model (`ELEMENTWISE_BOUND` of analyzers/synthetic/models.py).

By hand, on the H100 SXM (989 TFLOPS bf16, 3,350 GB/s): a 4096² bf16 add moves 3 · 4096² · 2
= 100,663,296 bytes, 30.049 µs on the memory roof; planted at 150 µs it runs at 20.03 % of
it. A 4096³ GEMM needs 138.968 µs (compute-bound); planted at 160 µs, 86.85 %. Per step 4
layers × (1 GEMM + 3 adds) run back to back (2,440 µs) and the next step's kernels are queued
before it ends, so the 3 steps fill a 7.32 ms window with no idle time: adds 5.4 ms (73.77 %
of compute), GEMMs 1.92 ms.

Flat answer: P1 is the elementwise add, memory-bound: its 5.4 ms brought 75 / 87.5 / 100 % of
the way to the roof is (1 − 0.2003) × 5.4 ms × (0.75, 0.875, 1) = 3.239 / 3.778 / 4.318 ms
less kernel time; P2 the GEMM, (1 − 0.8685) × 1.92 ms × (0.75, 0.875, 1).

Replayed (docs/what-if.md#priorities-from-the-replay): the host runs ahead and never waits, so
the GPU sets the pace: the steps are done 2,440 µs apart, not 2,000. Adds at any of the three
bounds leave a step at most 4 × 160 + 12 × 60.04 = 1,360.5 µs of GPU work, under the host's
2,000 µs period: the host then sets the pace, 440 µs a step sooner, 1.32 ms over the three
steps whatever the bound. GEMMs alone at their roofline keep the GPU the slower (2,440 − 4 ×
f × 21.03 µs a step): 12 × f × 21.03 µs = 0.189 / 0.221 / 0.252 ms.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.synthetic.models import (
    ELEMENTWISE_BOUND,
    PLATFORM,
    add_roofline_us,
    gemm_roofline_us,
    write_elementwise_bound_trace,
)
from tests.helpers.truth import assert_truthful, compute_metrics, ranked

P = ELEMENTWISE_BOUND
WINDOW_MS = P.steps * P.gpu_us / 1000
ADD_MS = P.steps * P.layers * P.adds * P.add_us / 1000
GEMM_MS = P.steps * P.layers * P.gemm_us / 1000
SCALE = (0.75, 0.875, 1.0)


def saving(roof_us: float, kernel_us: float, time_ms: float) -> tuple[float, ...]:
    gap = 1 - roof_us / kernel_us
    return tuple(gap * f * time_ms for f in SCALE)


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    trace = write_elementwise_bound_trace(tmp_path_factory.mktemp("truth") / "ew.json.gz")
    return ranked(trace, PLATFORM)


def test_the_hand_figures() -> None:
    assert (add_roofline_us(), gemm_roofline_us()) == pytest.approx((30.0487, 138.9676), 1e-5)
    assert saving(add_roofline_us(), P.add_us, ADD_MS) == pytest.approx(
        (3.2387, 3.7785, 4.3182), abs=1e-4
    )


def test_p1_is_the_elementwise_add(steps) -> None:
    top, second = steps.priorities().items[:2]
    assert (top.p_number, top.kind, top.category) == (1, "compute", "elementwise")
    assert top.title == "`elementwise`: `aten::add` (memory-bound, PyTorch Native)"
    assert top.estimate_method == "quantified"
    # efficiencies are kept to 2 decimals (20.03 %): within 0.05 % of the exact figure
    flat = saving(add_roofline_us(), P.add_us, ADD_MS)
    assert top.replay is not None and top.replay.flat_mid_ms == pytest.approx(flat[1], rel=5e-4)
    host_paced = P.steps * (P.gpu_us - P.period_us) / 1000
    assert host_paced == pytest.approx(1.32)
    assert top.saving.range_ms == pytest.approx((host_paced,) * 3, abs=1e-3)
    assert top.saving.cap_ms == pytest.approx(ADD_MS)
    assert top.replay.critical_next is not None and top.replay.critical_next.kind == "host_work"
    assert (second.category, second.kind) == ("gemm", "compute")
    per_gemm = P.gemm_us - gemm_roofline_us()  # 21.03 µs
    gemm = tuple(P.steps * P.layers * f * per_gemm / 1000 for f in (0.75, 0.875, 1.0))
    assert second.saving.range_ms == pytest.approx(gemm, rel=5e-3)


def test_efficiencies_and_shares(steps) -> None:
    metrics = compute_metrics(steps)
    add = metrics["elementwise"].operations[0]
    assert add.efficiency.bound_type == "memory"
    assert add.efficiency.efficiency_percent == pytest.approx(
        add_roofline_us() / P.add_us * 100, abs=0.01
    )
    assert metrics["elementwise"].percent_of_compute == pytest.approx(
        ADD_MS / WINDOW_MS * 100, abs=0.01
    )
    assert metrics["gemm"].percent_of_compute == pytest.approx(GEMM_MS / WINDOW_MS * 100, abs=0.01)
    gpu = steps.category_data().tables.manifest.gpu_utilization
    assert (gpu.total_time_ms, gpu.idle_time_percent) == pytest.approx((WINDOW_MS, 0.0))


def test_no_idle_item_and_nothing_over_100(steps) -> None:
    assert all(i.kind == "compute" for i in steps.priorities().items)
    assert_truthful(steps)
