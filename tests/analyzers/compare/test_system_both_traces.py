"""Both traces' system analyses in a comparative run (docs/compare.md#system-analyses-of-both-
traces), on the generated host-bound pair (tests/helpers/compare_pairs.py).

Hand-computed from the two plans (analyzers/synthetic/host.py). A step's GPU work is the
pinned copy then 39 kernels of 45 µs; the window runs from the first copy to the end of the
evaluation kernel launched 2 ms after the last step.

* Trace 1 (HOST_BOUND): 5 steps of 10 ms, copy 30 µs, busy 5 × 1,785 + 45 = 8,970 µs, window
  43,045 µs, idle 34,075 µs (79.16 %). The copy ends after the first kernel is launched, so a
  step's GPU work runs back to back: idle between steps 4 × (10,000 − 1,785) = 32,860 µs,
  after the last step 52,000 − (49,000 + 1,785) = 1,215 µs.
* Trace 2 (LESS_HOST_BOUND): 5 steps of 5 ms, copy 10 µs, busy 5 × 1,765 + 45 = 8,870 µs,
  window 23,045 µs, idle 14,175 µs (61.51 %). The 10 µs copy ends 15 µs before the first
  kernel can start (launched 25 µs after the copy's operator, 10 µs launch latency), so each
  step spans 1,780 µs: idle between steps 4 × (5,000 − 1,780) = 12,880 µs, inside the steps
  5 × 15 = 75 µs, after the last step 27,000 − (24,000 + 1,780) = 1,220 µs.
* Per iteration (5 against 5), trace 2 did without (34,075 − 1,215) − (14,175 − 1,220) =
  19,905 µs of idle time inside iterations and 5 × (30 − 10) = 100 µs of exposed copies.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.cpu_idle import IterationSummary
from rooflens.analyzers.findings.drafting.system_compare import (
    SystemSide,
    compare_sides,
    idle_sentence,
    system_markdown,
)
from rooflens.cli.main import main
from tests.helpers.compare_pairs import host_bound_pair

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

IDLE_SENTENCE = (
    "GPU idle 79.16 % of trace 1's window (34.075 ms of 43.045 ms) against 61.51 % in trace 2 "
    "(14.175 ms of 23.045 ms); both traces' idle is mostly input pipeline (DataLoader)."
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The comparative run of the pair, to the report, and trace 1's standalone run."""
    folder = tmp_path_factory.mktemp("host_pair")
    one, two = host_bound_pair(folder)
    compared, alone = folder / "compared", folder / "alone"
    platforms = ["--platform", "MI300X", "--platform2", "MI300X"]
    assert main(["compare", str(one), str(two), *platforms, "--out", str(compared)]) == 0
    assert main(["analyze", str(one), "--platform", "MI300X", "--out", str(alone)]) == 0
    return compared, alone


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_trace2_documents_hold_trace2s_own_figures(runs) -> None:
    compared, _ = runs
    idle2 = read(compared / layout.trace2_metrics("cpu_idle"))
    assert idle2["gpu_utilization"]["total_time_ms"] == 23.045
    assert idle2["gpu_utilization"]["idle_time_ms"] == 14.175
    assert idle2["gpu_utilization"]["idle_time_percent"] == 61.51
    causes = {c["cause"]: c["idle_ms"] for c in idle2["host_side"]["idle_causes"]}
    # 5 ms steps whose GPU work (a 10 µs copy, 15 µs idle, 39 × 45 µs) ends 0.798 ms into
    # the next step, whose loader runs to 3.95 ms: 4 × 3.152 ms inside `__next__`; dispatch
    # 5 × 15 µs inside the steps, 4 × 19 µs before each copy and 18 µs before the evaluation
    # kernel; unexplained 4 × 49 µs and the 1.202 ms before the evaluation kernel's operator
    assert causes["input_pipeline"] == 12.608
    assert causes["dispatch"] == 0.169
    assert causes["unexplained"] == 1.398
    assert idle2["host_side"]["idle_by_phase_ms"]["tail"] == 1.22
    assert idle2["host_side"]["iterations"]["count"] == 5
    multi2 = read(compared / layout.trace2_metrics("multi_kernel"))
    assert multi2["memcpy_summary"]["total_count"] == 5
    assert multi2["copies"]["exposed_ms"] == pytest.approx(0.05)


def test_trace1_documents_are_those_of_a_standalone_run(runs) -> None:
    compared, alone = runs
    for key in layout.TIMELINE_SYSTEM_KEYS:
        assert read(compared / layout.metrics(key)) == read(alone / layout.metrics(key)), key
    idle1 = read(compared / layout.metrics("cpu_idle"))
    assert idle1["gpu_utilization"]["idle_time_ms"] == 34.075
    assert not any((alone / layout.trace2_metrics(k)).exists() for k in layout.TIMELINE_SYSTEM_KEYS)
    assert "Trace 1 against trace 2" not in (alone / layout.REPORT).read_text(encoding="utf-8")


def test_report_sets_trace1_against_trace2(runs) -> None:
    compared, _ = runs
    report = (compared / layout.REPORT).read_text(encoding="utf-8")
    assert f"- **Idle against trace 2**: {IDLE_SENTENCE}" in report
    section = report.split("### Trace 1 against trace 2", 1)[1]
    assert section.lstrip().startswith(IDLE_SENTENCE)
    assert "| GPU idle | 34.075 ms (79.16 %) | 14.175 ms (61.51 %) | +19.90 ms" in section
    assert "| Exposed copies | 0.150 ms (0.35 %) | 0.050 ms (0.22 %) | +0.10 ms" in section
    assert "| Iterations | 5, 10.00 ms median | 5, 5.00 ms median | — |" in section
    assert (
        "Per iteration, trace 2 did without part of trace 1's time; over trace 1's 5 iterations "
        "that is 19.905 ms of idle time inside iterations, 0.100 ms of exposed copy time."
    ) in section
    assert "part of this can be the host CPU, not the program." in section  # not all code
    assert "exposed communication of" not in section  # neither trace communicates


def test_idle_card_states_trace2(runs) -> None:
    compared, _ = runs
    card = (compared / layout.findings("cpu_idle")).read_text(encoding="utf-8")
    assert "| Trace 2 idle time | 14.175 ms (61.51%) | false |" in card
    assert "In trace 2 the GPU is idle for 14.175 ms of 23.045 ms (61.51%)." in card


def test_comparative_run_validates(runs, capsys) -> None:
    compared, _ = runs
    assert main(["validate", str(compared)]) == 0, capsys.readouterr().out


def _side(idle_ms: float, window_ms: float, iterations: IterationSummary | None) -> SystemSide:
    return SystemSide(
        window_ms=window_ms, idle_ms=idle_ms, idle_pct=round(idle_ms / window_ms * 100, 2),
        cause=("input pipeline (DataLoader)", idle_ms), edges_ms=0.0,
        exposed_ms={"exposed_copies": 0.0, "exposed_comm": 0.0}, copies=(0, 0.0),
        collectives=(0, 0.0), kernels=(10, 0), iterations=iterations,
    )  # fmt: skip


def test_windows_without_iterations_get_no_avoidable_figure() -> None:
    steps = IterationSummary(method="profiler_step", confident=True, count=4, mean_ms=5.0,
                             median_ms=5.0, cv=0.0, min_ms=5.0, max_ms=5.0)  # fmt: skip
    compared = compare_sides(_side(30.0, 40.0, steps), _side(5.0, 20.0, None))
    assert compared.not_comparable == "trace 2 has no iterations with a measured time"
    assert compared.avoidable_ms == {}
    text = system_markdown(compared)
    assert "GPU idle 75.00 % of trace 1's window (30.000 ms of 40.000 ms) against 25.00 %" in text
    assert "no part of trace 1's time is called avoidable" in text and "did without" not in text
    blocked = replace(compared.two, cause=("host blocked in a synchronising call", 4.0))
    assert idle_sentence(replace(compared, two=blocked)).endswith(
        "; trace 1's idle is mostly input pipeline (DataLoader), trace 2's host blocked in a "
        "synchronising call."
    )
    guessed = steps.model_copy(update={"confident": False})
    assert compare_sides(_side(30.0, 40.0, steps), _side(5.0, 20.0, guessed)).not_comparable == (
        "trace 2's iterations were found with low confidence"
    )
