"""Every generated situation of an idle GPU (analyzers/synthetic/situations.py): P1 is
the idle time of the planted cause, named by its call site, with that cause's action; the
named causes explain all but a sliver of the idle; the steady-state idle of each cause is
the planted figure (each plan's docstring works it out).

Where rooflens's split differs from a plan's on purpose, `DEVIATIONS` says by how much and
why; every other cause must match the plan to the microsecond's rounding (1 µs per event).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.findings.ranking.idle_advice import ACTIONS, TITLES
from rooflens.analyzers.markdown_text import md_code
from rooflens.analyzers.perf.base import NO_MODEL
from rooflens.analyzers.synthetic.situations import SITUATIONS
from tests.helpers.truth import assert_replayed_idle_estimate, assert_truthful, ranked

# the situations whose P1 is an idle cause; the plan's action key for each of rooflens's
# causes (synthetic_planted.ACTIONS names them by family)
IDLE_SITUATIONS = (
    "allocator_churn",
    "allocator_churn_cuda",
    "single_process_loader",
    "loader_stalls",
    "optimizer_gap",
    "ddp_buffer_broadcast",
    "tiny_all_reduces",
    "launch_bound_mlp",
    "filtered_host_side",
    "format_2021",
)
PLATFORM = {"allocator_churn": "MI300X"}
UNEXPLAINED_SHARE = 0.10
# per situation, per cause: how far rooflens's steady-state idle may lie from the plan, and why
DEVIATIONS: dict[str, dict[str, tuple[float, str]]] = {
    "loader_stalls": {
        # the log_loss `.item()` that ends each step waits for the step's GPU work (134.7
        # ms); without it the host would reach the next loader that much earlier, so the
        # host-blocking analysis charges each stall's first 134.85 ms to the sync, and in
        # the 8 other steps the 18 µs before the copy too
        "input_pipeline": (3 * 134.851, "the sync before each stall"),
        "sync": (3 * 134.851 + 8 * 0.018, "the sync before each step"),
        "dispatch": (8 * 0.018, "the sync before each step"),
    },
    "allocator_churn": {"dispatch": (0.09, "a frame on another thread is no dispatch")},
    "allocator_churn_cuda": {"dispatch": (0.09, "a frame on another thread is no dispatch")},
    "filtered_host_side": {"dispatch": (0.09, "a frame on another thread is no dispatch")},
    "tiny_all_reduces": {
        # CompiledFunctionBackward's frame around the launches of each bucket: the plan
        # files the 1.2 ms between a record_param_comms and the next launch as collective
        "collective_issue": (1.2, "frames between collectives are dispatch"),
        "dispatch": (1.2, "frames between collectives are dispatch"),
    },
    "ddp_buffer_broadcast": {"collective_issue": (0.1, "launch latency of the broadcast")},
}


@cache
def _run(name: str, folder: Path):
    situation = SITUATIONS[name]
    trace = situation.write(folder / f"{name}.json.gz")
    return ranked(trace, PLATFORM.get(name, "H100_SXM")), situation.planted


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("situations")


def _host(steps) -> object:
    idle = steps.metrics_of("cpu_idle")
    assert isinstance(idle, CpuIdleMetrics) and idle.host_side is not None
    return idle.host_side


@pytest.mark.parametrize("name", IDLE_SITUATIONS)
def test_p1_is_the_planted_cause_named_by_its_call_site(name: str, folder: Path) -> None:
    steps, planted = _run(name, folder)
    top = steps.priorities().items[0]
    assert (top.p_number, top.kind, top.category) == (1, "system", "cpu_idle"), top.title
    assert top.title.startswith(TITLES[planted.cause]), top.title
    host = _host(steps)
    part = next(c for c in host.idle_causes if c.cause == planted.cause)
    if planted.cause not in ("launch_bound", "gpu_wait"):  # named by what ran, not a call
        names = {c.name for c in part.culprits} | {c.operator for c in part.culprits}
        assert planted.call_site in names or planted.caller in names, part.culprits
        assert md_code(part.culprits[0].name, 80) in top.title
    assert part.steady_ms is not None
    assert_replayed_idle_estimate(top, part.steady_ms, planted.cause)
    assert_truthful(steps)


@pytest.mark.parametrize("name", IDLE_SITUATIONS)
def test_the_card_gives_the_causes_own_action(name: str, folder: Path) -> None:
    steps, planted = _run(name, folder)
    (card,) = steps.findings_of("cpu_idle").cards
    assert planted.cause is not None
    fields = dict(card.fields)
    assert fields["Action"] == ACTIONS[planted.cause]
    others = {ACTIONS[c] for c in ACTIONS if c != planted.cause}
    assert fields["Action"] not in others  # never another cause's template


@pytest.mark.parametrize("name", IDLE_SITUATIONS)
def test_named_causes_explain_the_idle(name: str, folder: Path) -> None:
    steps, planted = _run(name, folder)
    host = _host(steps)
    total = sum(c.idle_ms for c in host.idle_causes)
    unexplained = next(c.idle_ms for c in host.idle_causes if c.cause == "unexplained")
    assert unexplained <= UNEXPLAINED_SHARE * total
    deviations = DEVIATIONS.get(name, {})
    steady = {c.cause: c.steady_ms or 0.0 for c in host.idle_causes}
    for cause in {*planted.idle_by_cause_ms, *deviations}:
        allowed, _why = deviations.get(cause, (0.001 * 10, ""))
        expected = planted.idle_by_cause_ms.get(cause, 0.0)
        assert steady.get(cause, 0.0) == pytest.approx(expected, abs=allowed + 1e-6), cause


def test_a_growing_slowdown_is_said_never_averaged(folder: Path) -> None:
    steps, planted = _run("allocator_churn", folder)
    iterations = _host(steps).iterations
    assert iterations is not None and iterations.growing
    assert iterations.min_ms == pytest.approx(min(planted.step_ms), abs=0.01)
    assert iterations.max_ms == pytest.approx(max(planted.step_ms), abs=0.01)
    assert "grow" in iterations.phase_detail


def test_the_gpu_side_wait_is_not_blamed_on_the_host(folder: Path) -> None:
    """The GPU idles 64 ms a step with its next kernel already queued (a cross-stream event)
    while the host sits in a blocking 704-byte copy: the idle is the GPU's own wait."""
    steps, planted = _run("gpu_side_wait", folder)
    host = _host(steps)
    steady = {c.cause: c.steady_ms or 0.0 for c in host.idle_causes}
    assert steady["gpu_wait"] == pytest.approx(planted.idle_by_cause_ms["gpu_wait"], abs=0.01)
    assert steady["sync"] < 0.1  # the host's blocking copy holds none of the GPU's idle
    assert host.queue is not None and host.queue.deep
    items = steps.priorities().items
    idle_items = [i for i in items if i.category == "cpu_idle"]
    assert idle_items and idle_items[0].title.startswith(TITLES["gpu_wait"])
    # named by the dependency the launching thread set up before the queued launch
    assert planted.call_site == "cudaStreamWaitEvent"
    assert f"(most in {md_code(planted.call_site)}" in idle_items[0].title
    wait = next(c for c in host.idle_causes if c.cause == "gpu_wait")
    assert wait.culprits[0].name == planted.call_site
    assert wait.culprits[0].idle_ms == pytest.approx(planted.idle_by_cause_ms["gpu_wait"], 1e-3)
    (card,) = steps.findings_of("cpu_idle").cards
    assert "feed the GPU" not in dict(card.fields)["Action"].replace("do not try to feed", "")


def test_warm_up_is_excluded_from_the_priorities(folder: Path) -> None:
    """The first iteration holds a 10 s cudaFree in the first convolution, module loads and
    first launches: 98.5 % of the window, reported as warm-up and priced at nothing."""
    steps, planted = _run("warmup_in_window", folder)
    host = _host(steps)
    assert host.phases is not None and host.phases.warmup == list(planted.warmup_iterations)
    assert "warm-up" in host.phases.detail
    allocator = next(c for c in host.idle_causes if c.cause == "allocator")
    assert allocator.idle_ms >= 10_000 and allocator.steady_ms == pytest.approx(0.0)
    idle_items = [i for i in steps.priorities().items if i.category == "cpu_idle"]
    assert all(i.saving is None or i.saving.cap_ms < 1.0 for i in idle_items)
    # the iteration figures are the steady state's; the warm-up is said apart, by cause
    iterations = host.iterations
    assert iterations is not None
    steady = [planted.step_ms[k] for k in planted.steady_iterations] if planted.step_ms else []
    if steady:
        assert iterations.max_ms == pytest.approx(max(steady), abs=0.01)
    assert iterations.max_ms < 100.0  # not the 11.8 s warm-up step
    assert "`cudaFree`" in iterations.warmup_detail
    assert "excluded from the priorities" in iterations.warmup_detail


def test_warm_up_leaves_the_steady_compute_first(folder: Path) -> None:
    """Without the warm-up's idle the window is 0.2 s of 99.9 %-busy iterations, 82 % of it
    convolutions: the findings are judged against that, so the convolutions are P1 (no
    shapes: not quantifiable, with the reason) where the whole 12 s window ranked nothing."""
    steps, planted = _run("warmup_in_window", folder)
    manifest = steps.category_data().manifest
    window = manifest.gpu_utilization.total_time_ms
    excluded = sum(planted.excluded_idle_ms.values())
    assert manifest.judged_window_ms == pytest.approx(window - excluded, abs=0.01)
    top = steps.priorities().items[0]
    assert planted.p1 == "compute"
    assert (top.p_number, top.kind, top.category) == (1, "compute", "conv_fwd"), top.title
    assert md_code(planted.call_site, 80) in top.title
    assert top.saving is None and top.unquantified_reason == NO_MODEL
    # the parent convolution's own 1.8 ms (0.27 % of the judged window at mid) stays out
    titles = [i.title for i in steps.priorities().items]
    assert not any("`aten::convolution`" in t for t in titles)
    assert_truthful(steps)
