"""GPU-only kernels: the host-bound trace (`HOST_BOUND`) as `ProfilerActivity.CUDA` alone
records it, with no operator, module or annotation (runtime launches and the device's work
kept).

By hand: categories come from kernel names. GEMM: 5 steps × 36 `Cijk_` kernels × 45 µs =
8.1 ms; the optimizer's kernels (5 × 3 × 45 µs = 0.675 ms) are `multi_tensor_apply`, as
their operators would be; the evaluation add (45 µs) is elementwise; the H2D copies are not
computation. Computation 8.82 ms: GEMM 91.84 %, foreach 7.65 %, elementwise 0.51 %.
Without operators no iteration can be found, so all 34.075 ms of idle time is one cause.

Answer: P1 is the idle GPU, 25 / 50 / 75 % of 34.075 ms (8.519 / 17.038 / 25.556 ms); the
kernels with no perf model get no measured saving and rank after it, as one item whose table
lists each kernel by its short name (docs/analysis.md#unquantified-items): no host side, no
operator or shape behind them, so one card each would say nothing more.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.findings.ranking.unmodelled_group import UNMODELLED_KEY
from rooflens.analyzers.perf.kernel_names import short_kernel_name
from rooflens.analyzers.synthetic.host import HOST_BOUND, write_host_bound_trace
from rooflens.cli.main import main
from tests.helpers.sample_traces import gpu_only, read_document, write_document
from tests.helpers.truth import assert_truthful, compute_metrics, ranked

P = HOST_BOUND
GEMM_MS = P.steps * (P.forward + P.backward) * P.kernel_us / 1000
FOREACH_MS = P.steps * P.optimizer * P.kernel_us / 1000
ELEMENTWISE_MS = P.kernel_us / 1000
COMPUTATION_MS = GEMM_MS + FOREACH_MS + ELEMENTWISE_MS
IDLE_MS = 34.075  # test_host_bound.py: 43.045 ms window − 5 × 1.785 − 0.045 ms busy


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("truth")
    document = read_document(write_host_bound_trace(folder / "host.json.gz"))
    gpu_only(document)
    return write_document(document, folder / "gpu_only.json.gz")


@pytest.fixture(scope="module")
def steps(trace):
    return ranked(trace, "H100_SXM", until="reported")


def test_categories_come_from_kernel_names(steps) -> None:
    assert pytest.approx(8.82) == COMPUTATION_MS
    metrics = compute_metrics(steps)
    planted = {"gemm": GEMM_MS, "multi_tensor_apply": FOREACH_MS, "elementwise": ELEMENTWISE_MS}
    assert {k: m.total_time_ms for k, m in metrics.items()} == pytest.approx(planted)
    shares = {k: m.percent_of_compute for k, m in metrics.items()}
    expected = {k: v / COMPUTATION_MS * 100 for k, v in planted.items()}
    assert shares == pytest.approx(expected, abs=0.01)
    notes = " ".join(steps.category_data().tables.manifest.notes)
    assert "compute categories come from kernel names" in notes


def test_p1_is_the_idle_gpu(steps) -> None:
    items = steps.priorities().items
    top = items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle")
    assert top.saving.range_ms == pytest.approx(
        (0.25 * IDLE_MS, 0.5 * IDLE_MS, 0.75 * IDLE_MS), abs=1e-6
    )
    unquantified = [i for i in items if i.saving is None]  # no perf model: no measured saving
    assert [i.category for i in unquantified] == [UNMODELLED_KEY]
    assert unquantified[0].p_number > 1


def test_unmodelled_kernels_are_one_table_with_short_names(steps) -> None:
    """The unmodelled kernels are one item; its card's table lists each by its short name
    with its time; no title runs past 120 characters."""
    items = steps.priorities().items
    group = next(i for i in items if i.category == UNMODELLED_KEY)
    ops = [op for m in compute_metrics(steps).values() for op in m.operations or ()]
    assert group.time_ms == pytest.approx(sum(op.time_ms for op in ops))
    report = steps.results.report_text
    assert report.count(f"P{group.p_number}: ") == 2  # its card and its detailed block
    for op in ops:
        short = short_kernel_name(op.name)
        assert len(short) <= 80
        assert f"| `{short}` |" in report
    assert all(len(i.title) <= 120 for i in items)
    headings = [line for line in report.splitlines() if line.startswith("#")]
    assert max(len(h) for h in headings) <= 130
    assert not any("void " in h for h in headings)


def test_nothing_said_about_launches_or_the_host(steps) -> None:
    """No host recorded: no claim about launches or what the host did."""
    report = steps.results.report_text.lower()
    assert "launch-bound" not in report and "launch queue" not in report
    assert "no host event recorded" in report


@pytest.mark.slow
def test_the_run_validates(trace, tmp_path) -> None:
    out = tmp_path / "run"
    assert main(["analyze", str(trace), "--platform", "H100_SXM", "--out", str(out)]) == 0
    assert main(["validate", str(out)]) == 0


def test_the_system_analyses_ran(steps) -> None:
    idle = steps.results.metrics["cpu_idle"]
    assert idle.status == "OK"
    assert idle.kernel_analysis.total_kernel_count == P.steps * 39 + 1
    assert steps.results.metrics["multi_kernel"].status == "SUCCESS"


def test_no_share_over_100_and_no_estimate_without_a_roofline(steps) -> None:
    assert_truthful(steps)
