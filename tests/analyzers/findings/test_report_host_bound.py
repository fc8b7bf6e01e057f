"""The report of an idle-heavy run: the generator's host-bound trace (five 10 ms steps whose
data loader holds the host 9 ms each), where the idle GPU is worth more than any kernel fix.

Worked out from the plan (analyzers/synthetic/host.py, HostBoundPlan): each step's 40
kernels start at 9.018 ms into it (the first operator at 9 ms, its launch call 8 µs later,
10 µs of launch latency) and run back to back, a 30 µs copy then 39 × 45 µs = 1.785 ms, to
10.803 ms. After the five steps the host waits 2 ms and launches one 45 µs kernel at
52.018 ms. So the window is 52.063 − 9.018 = 43.045 ms; compute 5 × 1.755 + 0.045 = 8.82 ms;
copies 5 × 0.030 = 0.150 ms; idle 43.045 − 8.97 = 34.075 ms, of which 4 × (19.018 − 10.803)
= 32.86 ms lies between iterations and 1.215 ms after the last one (the tail, no finding).
Of each gap between steps, the data loader's `__next__` (to 8.95 ms into the step) holds
8.95 − 0.803 = 8.147 ms: 32.588 ms, the data-loader item's cap. Replayed without the
loader's host code (tests/truth/test_host_bound.py works it out) each 10 ms step is paced by
its 1.785 ms of GPU work: 8.215 ms a step, 41.075 ms over five, of which a fix wins back
50/75/100 % (20.5375 / 30.80625 / 32.588 ms once capped), 47.71 / 71.57 / 75.71 % of the
window; 10.00 ms a step before, 3.84 after at mid (6.16 ms a step).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.steps import LOADED, REPORTED, Pipeline, RunResults
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.synthetic.host import write_host_bound_trace
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model


def _report(folder: Path, *, marked: bool) -> str:
    trace = write_host_bound_trace(folder / "host_bound.json.gz", profiler_steps=marked)
    platform = get_platform("H100_SXM")
    model = build_model(load_trace(trace))
    results = RunResults(model, build_report(model, platform), platform, str(trace), "run")
    done = [LOADED]
    steps = Pipeline(results, None, done=done.__contains__, mark=lambda *s: done.extend(s))
    steps.run(until=REPORTED)
    assert results.report_text is not None
    return results.report_text


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _report(tmp_path_factory.mktemp("host"), marked=True)


def test_the_idle_gpu_is_p1_of_the_report(report: str) -> None:
    table = report.split("## Priorities\n", 1)[1].split("\n## ", 1)[0]
    p1 = next(ln for ln in table.splitlines() if ln.startswith("| P1 |"))
    # 50/75/100 % of the replayed 41.075 ms, capped at the loader's 32.588 ms
    assert p1.startswith(
        "| P1 | system | The GPU sat idle waiting for the next batch from the data loader "
        "(most in `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`): 32.6 ms "
        "(75.7 %"
    )
    assert "| 20.54–32.59 | 30.81 | 47.71–75.71 | the GPU idle time, 32.59 ms |" in p1
    system = report.split("## System-Level Optimizations", 1)[1].split("\n## ", 1)[0]
    assert "### 🔴 P1: " in system
    assert "**Impact**: 20.54–32.59 ms (mid 30.81 ms, 71.57 % of the window)" in system


def test_what_fixing_each_would_buy(report: str) -> None:
    section = report.split("## What fixing each would buy\n", 1)[1].split("\n## ", 1)[0]
    assert "10.00 ms a step now" in section
    p1 = next(ln for ln in section.splitlines() if ln.startswith("| P1 |"))
    assert p1.startswith(
        "| P1 | 5 calls of `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`, "
        "removed, host code and waits (their GPU work kept); a fix wins back 75 % of that |"
    )
    # 8.215 ms a step: 75 % of it 6.16, 50 % 4.11, the high capped at 32.588 / 5 = 6.52
    assert "| 10.00 → 3.84 | 6.16 (4.11–6.52) |" in p1
    assert not any(ln.startswith("| P2 |") for ln in section.splitlines())  # no saving known
    compute = report.split("## Compute Kernel Optimizations", 1)[1].split("\n## ", 1)[0]
    assert "### 🔴" not in compute and "### 🟡 P2: " in compute


def test_the_summary_of_the_host_bound_run(report: str) -> None:
    summary = report.split("## Executive Summary\n", 1)[1].split("\n## ", 1)[0]
    assert "- **Analysed window**: 43.05 ms, from the first to the last GPU event" in summary
    assert "- **Iterations**: 5 (from ProfilerStep# marks); 10.00 ms per iteration" in summary
    busy = "- **GPU busy**: 8.97 ms (20.84 %): compute 8.82 ms (20.49 %), exposed communication"
    assert busy in summary and "exposed copies 0.150 ms (0.35 %)." in summary
    # one idle figure: P1 prices the loader's 32.588 ms of the 34.075 ms idle, and says so
    idle = "- **GPU idle**: 34.08 ms (79.16 %); P1 counts 32.59 ms of it: input pipeline "
    assert idle + "(DataLoader), in the steady-state iterations." in summary
    assert "  - P1: The GPU sat idle waiting for the next batch from the data loader" in summary


def test_health_warnings_reach_the_report(tmp_path: Path) -> None:
    """Without ProfilerStep# marks, trace health warns, and the iterations end with the
    optimizer's steps instead."""
    text = _report(tmp_path, marked=False)
    seen = text.split("## What this analysis could and could not see\n", 1)[1].split("\n## ")[0]
    assert "- ℹ️ `no_profiler_steps`: No ProfilerStep annotations" in seen
    assert "Call prof.step() once per training or inference step." in seen
    assert "- **Iterations**: 5 (ended by optimizer steps)" in text
