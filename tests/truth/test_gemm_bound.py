"""A GEMM-bound model near its roofline (`GEMM_BOUND` of analyzers/synthetic/models.py).

By hand, on the H100 SXM: a 4096³ bf16 GEMM needs 138.968 µs at 989 TFLOPS; planted at
146 µs it runs at 95.18 % of its roof. The 4096² add needs 30.049 µs at 3,350 GB/s; planted
at 32 µs, 93.90 %. Per step 8 × (GEMM + add) run back to back, 1,424 µs, starting 268 µs into
the 1,700 µs period: the GPU idles 276 µs between consecutive steps, 0.552 ms over 3 steps,
in a 4.824 ms window.

The host spends each period's first 245 µs in the data loader's `__next__` (it ends 5 µs
before the first operator, which starts its GEMM 18 µs in): of each 276 µs gap (the last
8 µs of a period and the next one's first 268), 245 µs lie inside `__next__`, 0.49 ms over
the two gaps.

Answer, replayed (docs/what-if.md#priorities-from-the-replay): the host sets the pace, so
GEMMs at their roofline ((1 − 0.9518) × 3.504 ms × (0.75, 0.875, 1) = 0.127 / 0.148 /
0.169 ms less kernel time) end each step's GPU work sooner but no step sooner: they buy
nothing, and that flat figure is kept only as what they would buy once the path moves. P1
is the data loader: without its 245 µs of host code a period is 1,455 µs, so the three steps
end 0.735 ms sooner; a fix wins back 50 / 75 / 100 % of that, never more than the 0.49 ms of
idle it holds (0.3675 / 0.49 / 0.49 ms). The GEMM is P2.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.synthetic.models import (
    GEMM_BOUND,
    PLATFORM,
    gemm_roofline_us,
    write_gemm_bound_trace,
)
from tests.helpers.truth import assert_truthful, compute_metrics, ranked

P = GEMM_BOUND
GEMM_MS = P.steps * P.layers * P.gemm_us / 1000
BETWEEN_MS = (P.steps - 1) * (P.period_us - P.gpu_us) / 1000
WINDOW_MS = (P.steps * P.gpu_us) / 1000 + BETWEEN_MS
GAP = 1 - gemm_roofline_us() / P.gemm_us


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    trace = write_gemm_bound_trace(tmp_path_factory.mktemp("truth") / "gemm.json.gz")
    return ranked(trace, PLATFORM)


def test_the_hand_figures() -> None:
    assert pytest.approx((3.504, 0.552, 4.824)) == (GEMM_MS, BETWEEN_MS, WINDOW_MS)
    assert pytest.approx(0.048168, abs=1e-6) == GAP


def test_p1_is_the_data_loader_between_iterations(steps) -> None:
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle")
    assert top.title.startswith("The GPU sat idle waiting for the next batch from the data")
    removed = P.steps * (P.load_us - 5.0) / 1000  # the loader's 245 µs out of every period
    assert removed == pytest.approx(0.735)
    assert top.saving.range_ms == pytest.approx(
        tuple(min(f * removed, 0.49) for f in (0.5, 0.75, 1.0)), abs=1e-6
    )


def test_the_gemm_saving_is_what_its_roofline_leaves(steps) -> None:
    gemm = next(i for i in steps.priorities().items if i.category == "gemm")
    assert (gemm.p_number, gemm.estimate_method) == (2, "quantified")
    # the host sets the pace: faster GEMMs buy no step time (the replay), and the flat
    # estimate is what their roofline leaves
    assert gemm.saving.range_ms == (0.0, 0.0, 0.0)
    assert gemm.replay is not None and gemm.replay.predicted_step_ms == gemm.replay.step_ms
    flat = GAP * 0.875 * GEMM_MS
    assert gemm.replay.flat_mid_ms == pytest.approx(flat, rel=5e-3)
    assert flat <= 0.05 * GEMM_MS  # no invented saving: under 5 % of its time
    op = compute_metrics(steps)["gemm"].operations[0]
    assert op.efficiency.efficiency_percent == pytest.approx(95.18, abs=0.01)
    assert op.efficiency.bound_type == "compute"


def test_no_share_over_100_and_no_estimate_without_a_roofline(steps) -> None:
    assert_truthful(steps)
