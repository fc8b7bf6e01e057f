"""Launch-bound: thousands of short kernels, each launched into an empty queue
(`LAUNCH_BOUND` of analyzers/synthetic/host.py).

By hand: each of 2 steps launches 1,500 aten::add, 20 µs apart, each 4 µs kernel starting
10 µs after its launch call, then one optimizer kernel: 1,501 kernels, 1,500 gaps of 16 µs
each, 2 × 1,500 × 16 µs = 48 ms launch-bound. The second step's first kernel starts 996 µs
after the first step's last one ends. Window: 18 µs to 31,000 + 30,022 µs, 61.004 ms.

Answer: P1 is the launch-bound idle time, 25 / 50 / 75 % of 48 ms (12 / 24 / 36 ms).
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.synthetic.host import LAUNCH_BOUND, write_launch_bound_trace
from tests.helpers.truth import assert_truthful, ranked

P = LAUNCH_BOUND
GAP_US = P.op_us - P.kernel_us
LAUNCH_BOUND_MS = P.steps * P.kernels * GAP_US / 1000
WINDOW_MS = (P.period_us + P.kernels * P.op_us + 18 + P.kernel_us - 18) / 1000


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    trace = write_launch_bound_trace(tmp_path_factory.mktemp("truth") / "launch.json.gz")
    return ranked(trace, "H100_SXM")


def test_p1_is_the_launch_bound_stretches(steps) -> None:
    assert pytest.approx((48.0, 61.004)) == (LAUNCH_BOUND_MS, WINDOW_MS)
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle")
    assert top.title.startswith("The GPU waited on kernel launches")
    assert top.saving.range_ms == pytest.approx((12.0, 24.0, 36.0), abs=1e-6)
    assert top.percent_mid == pytest.approx(24.0 / WINDOW_MS * 100, abs=0.01)


def test_the_kernels_are_counted(steps) -> None:
    idle = steps.results.metrics["cpu_idle"]
    assert idle.kernel_analysis.total_kernel_count == P.steps * (P.kernels + 1)


def test_no_share_over_100_and_no_estimate_without_a_roofline(steps) -> None:
    assert_truthful(steps)
