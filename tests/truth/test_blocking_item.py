"""A blocking `.item()` inside a model step (`BLOCKING` of analyzers/synthetic/host.py).

By hand, per 11 ms step (times from the step's start, in µs): burst A's 30 mm kernels of
100 µs run 18–3,018. The Router's `.item()` at 600 queues a 3 µs D2H copy (3,018–3,021) and
synchronises 612–3,026; the host then spends 400 µs and burst B starts on the GPU at 3,448.
The call drained the queue, so it is charged the whole gap 3,021–3,448: 427 µs (it waited
2,409 µs while the GPU was busy, more than the gap). Burst B runs 3,448–6,448; log_metrics'
`.item()` at 6,230 synchronises 6,242–6,456 with the GPU busy 209 µs of it (until the copy
ends at 6,451): charged 5 µs of overlap + 209 µs of the gap after it, 214 µs. Blocking:
3 × (427 + 214) = 1,923 µs. The rest of that second gap (3 × 813 µs) is train_step's own
Python after the queue it found ran out, and so are the two gaps between steps (2 × 540 µs):
3,519 µs in which a Python frame ran and no call waited.

Answer: P1 is the host's Python in `train.py(55): train_step`; replayed with that frame's
host work 25 / 50 / 75 % faster, the host sets the pace, so each cut wins more than that
share of the 3.519 ms of idle (at most all of it); P2 the host blocked in
`cudaStreamSynchronize` under `aten::item`: replayed without those calls the GPU no longer
drains, and 50 / 75 / 100 % of the 1.923 ms they held is won back.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.synthetic.host import write_blocking_item_trace
from tests.helpers.truth import assert_replayed_idle_estimate, assert_truthful, ranked

BLOCKING_MS = 3 * (427 + 214) / 1000
PYTHON_MS = (3 * 813 + 2 * 540) / 1000
# burst C starts 1,000 µs after the second `.item()` returns (6,460) + 18 and runs 3,000 µs
C_END_US = 6_460 + 1_000 + 18 + 3_000
WINDOW_MS = (2 * 11_000 + C_END_US - 18) / 1000  # the first kernel to the last step's end


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    trace = write_blocking_item_trace(tmp_path_factory.mktemp("truth") / "blocking.json.gz")
    return ranked(trace, "H100_SXM")


def test_p1_is_the_python_after_the_drained_queue(steps) -> None:
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle")
    assert top.title.startswith(
        "The GPU sat idle while the host ran operators and Python between launches (most in "
        "`train.py(55): train_step`)"
    )
    assert_replayed_idle_estimate(top, PYTHON_MS, "dispatch")
    assert top.saving.high_ms == pytest.approx(PYTHON_MS)  # a 75 % cut wins all the idle


def test_p2_is_the_blocking_item_call(steps) -> None:
    second = steps.priorities().items[1]
    assert "`cudaStreamSynchronize` under `aten::item`" in second.title
    assert second.saving.range_ms == pytest.approx(
        (0.5 * BLOCKING_MS, 0.75 * BLOCKING_MS, BLOCKING_MS), abs=1e-6
    )


def test_the_window(steps) -> None:
    gpu = steps.category_data().tables.manifest.gpu_utilization
    assert gpu.total_time_ms == pytest.approx(WINDOW_MS, abs=1e-6)
    assert steps.priorities().items[1].percent_high == pytest.approx(
        BLOCKING_MS / WINDOW_MS * 100, abs=0.01
    )


def test_no_share_over_100_and_no_estimate_without_a_roofline(steps) -> None:
    assert_truthful(steps)
