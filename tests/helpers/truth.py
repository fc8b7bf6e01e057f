"""What every truth-corpus test (tests/truth/) and the every-trace golden check share: a run of
a trace through the pipeline in memory, and the checks every run must pass whatever its trace
(docs/analysis.md#one-impact-scale, #category-time):

* no share above 100 %: the GPU utilisation split, each compute category's share of compute
  time and the categories together, each operation's shares, the idle causes' shares of the
  window, each item's saving and the saving totals in % of the window;
* the compute categories add up to the computation time (within 2 %);
* no estimate from a row without a usable roofline: a quantified compute finding only from
  operations with an efficiency at most 110 % and not flagged anomalous, and no estimate of
  any kind from an operation above 110 %;
* no item capped by more time than its pool of the window holds (its kernels' time within
  the computation time, an idle cause within the idle time ...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.categories.any_metrics import Metrics, metrics_from_document
from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.categories.scoring import ANOMALY_PCT
from rooflens.analyzers.findings.ranking.idle_advice import CAUSE_RECOVERY
from rooflens.analyzers.findings.ranking.impact_scale import PriorityItem, pool_sizes
from rooflens.analyzers.findings.ranking.priorities import PriorityData
from rooflens.analyzers.findings.ranking.replay_price import REMOVED
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.pipeline.steps import LOADED, Pipeline, RunResults
from rooflens.analyzers.prepare.manifest import Manifest
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

PERCENT = re.compile(r"(\d+(?:\.\d+)?) ?%")
SHARE_SLACK = 0.05  # percentage points: each share is rounded to 2 decimals
TIME_TOLERANCE = 0.02  # the category sum against the computation time


def ranked(trace: Path, platform: str, *, until: str = "aggregated") -> Pipeline:
    """A run of `trace` on `platform` held in memory (nothing written), taken to `until`."""
    chosen = get_platform(platform)
    model = build_model(load_trace(trace))
    results = RunResults(model, build_report(model, chosen), chosen, str(trace), "run")
    done = [LOADED]
    steps = Pipeline(results, None, done=done.__contains__, mark=lambda *s: done.extend(s))
    steps.run(until=until)
    return steps


@dataclass(frozen=True)
class RunView:
    """What the checks read of a run: its manifest, its metrics, its priorities and, once
    composed, its report."""

    manifest: Manifest
    metrics: Mapping[str, Metrics]
    priorities: PriorityData
    report: str | None = None

    @classmethod
    def of(cls, steps: Pipeline) -> RunView:
        results = steps.results
        return cls(
            steps.category_data().manifest,
            dict(results.metrics),
            steps.priorities(),
            results.report_text,
        )

    @classmethod
    def read(cls, folder: Path) -> RunView:
        """The view of a run folder `rooflens analyze` wrote."""
        manifest = Manifest.model_validate_json((folder / layout.MANIFEST).read_text())
        metrics = {}
        for entry in manifest.categories:
            path = folder / layout.metrics(entry.name)
            if path.is_file():
                document = json.loads(path.read_text())
                metrics[entry.name] = metrics_from_document(entry.name, document)
        priorities = PriorityData.model_validate_json((folder / layout.PRIORITIES).read_text())
        report = folder / layout.REPORT
        return cls(manifest, metrics, priorities, report.read_text() if report.is_file() else None)


def _view(run: Pipeline | RunView) -> RunView:
    return run if isinstance(run, RunView) else RunView.of(run)


def compute_metrics(run: Pipeline | RunView) -> dict[str, CategoryMetrics]:
    """The compute categories' metrics that were scored (status OK)."""
    found = _view(run).metrics.items()
    return {k: m for k, m in found if isinstance(m, CategoryMetrics) and m.status == "OK"}


def share_problems(run: Pipeline | RunView) -> list[str]:
    """Every share of the run above 100 % (empty when none is)."""
    view = _view(run)
    limit = 100 + SHARE_SLACK
    problems = []
    for name, value in view.manifest.gpu_utilization.model_dump().items():
        if name.endswith("_percent") and value > limit:
            problems.append(f"gpu_utilization {name} = {value}")
    metrics = compute_metrics(view)
    for key, m in metrics.items():
        if (m.percent_of_compute or 0) > limit:
            problems.append(f"{key} percent_of_compute = {m.percent_of_compute}")
        for op in m.operations or ():
            if op.percent_of_category > limit or (op.percent_of_total or 0) > limit:
                problems.append(f"{key} {op.name}: {op.percent_of_category}, {op.percent_of_total}")
    together = sum(m.percent_of_compute or 0 for m in metrics.values())
    if together > 100 + SHARE_SLACK * max(1, len(metrics)):
        problems.append(f"the categories hold {together:.2f} % of compute time")
    idle = view.metrics.get("cpu_idle")
    if isinstance(idle, CpuIdleMetrics) and idle.host_side is not None:
        for part in idle.host_side.idle_causes:
            if part.percent_of_window > limit or part.percent_of_idle > limit:
                problems.append(f"idle cause {part.cause}: {part.percent_of_window} % of window")
    for item in view.priorities.items:
        if (item.percent_high or 0) > limit:
            problems.append(f"P{item.p_number} saves {item.percent_high} % of the window")
    totals = view.priorities.saving_totals
    if totals is not None and totals.percent_mid > limit:
        problems.append(f"the items together save {totals.percent_mid} % of the window")
    return problems + _summary_problems(view.report or "", limit)


def _summary_problems(report: str, limit: float) -> list[str]:
    """Percentages above `limit` in the report's Executive Summary table (its shares of the
    window and the top category's share of compute time)."""
    summary = report.split("## Executive Summary", 1)[-1].split("\n## ", 1)[0]
    rows = [line for line in summary.splitlines() if line.startswith("| ")]
    return [
        f"Executive Summary: {row}"
        for row in rows
        if any(float(v) > limit for v in PERCENT.findall(row))
    ]


def category_time_problem(run: Pipeline | RunView) -> str | None:
    """The compute categories' time against the computation time, when beyond 2 %."""
    manifest = _view(run).manifest
    gpu = manifest.gpu_utilization
    computation = gpu.total_time_ms * gpu.computation_time_percent / 100
    held = sum(
        c.gpu_kernel_time_ms or 0.0 for c in manifest.categories if c.tier == "compute_kernel"
    )
    if abs(held - computation) > TIME_TOLERANCE * max(computation, held):
        return f"the categories hold {held:.3f} ms of {computation:.3f} ms of computation"
    return None


def estimate_problems(run: Pipeline | RunView) -> list[str]:
    """Estimates drawn from rows without a usable roofline (empty when none is)."""
    problems = []
    for key, m in compute_metrics(run).items():
        anomalous = {op.name for op in m.operations or () if op.efficiency.is_anomaly}
        for finding in m.category_findings or ():
            for member in finding.members:
                eff = member.efficiency_pct
                if eff is not None and eff > ANOMALY_PCT:
                    problems.append(f"{key} {member.operation}: estimate from {eff} % of roof")
                if finding.estimate_method != "quantified":
                    continue
                if eff is None or member.operation in anomalous:
                    problems.append(f"{key} {member.operation}: quantified without a roofline")
    return problems


def cap_problems(run: Pipeline | RunView) -> list[str]:
    """Items whose cap (the time they could at most give back) is more than their pool of
    the window holds: a finding never saves more than its kernels ran or the GPU waited."""
    view = _view(run)
    sizes = pool_sizes(view.manifest.gpu_utilization)
    problems = []
    for item in view.priorities.items:
        saving = item.saving
        if saving is not None and saving.cap_ms > sizes[saving.pool] * (1 + TIME_TOLERANCE):
            problems.append(
                f"P{item.p_number} {item.title}: capped by {saving.cap_ms:.3f} ms, more than "
                f"the {sizes[saving.pool]:.3f} ms of {saving.pool} the window holds"
            )
    return problems


def assert_truthful(run: Pipeline | RunView) -> None:
    """The checks every run passes, whatever its trace (this module's docstring)."""
    view = _view(run)
    assert share_problems(view) == []
    assert category_time_problem(view) is None
    assert estimate_problems(view) == []
    assert cap_problems(view) == []


def assert_replayed_idle_estimate(top: PriorityItem, steady_ms: float, cause: str) -> None:
    """An idle item's estimate is the replay's (docs/what-if.md#priorities-from-the-replay),
    never above the cause's steady-state idle (its cap). A cause whose fix removes calls is
    priced by one replay of their removal, a share of it per bound: that removal gives back
    at least the idle the calls held (the GPU waited for them); a cause whose fix shortens
    host code wins at least that share of the idle (more when the host sets the pace). A
    cause named by no call (launches, a GPU-side wait) keeps the flat shares of its idle."""
    fractions = CAUSE_RECOVERY[cause]
    price, saving = top.replay, top.saving
    assert saving is not None and saving.cap_ms == pytest.approx(steady_ms, abs=1e-9)
    if price is None or price.predicted_step_ms is None:  # no calls named: the flat shares
        flat = tuple(steady_ms * f for f in fractions)
        assert cause not in REMOVED and saving.range_ms == pytest.approx(flat, abs=1e-6)
        return
    assert price.on_path, price
    if cause in REMOVED:
        removal = saving.low_ms / fractions[0]
        assert removal >= 0.98 * steady_ms, (removal, steady_ms)
        expected = tuple(min(removal * f, steady_ms) for f in fractions)
        assert saving.range_ms == pytest.approx(expected, rel=1e-6)
        return
    for saved, f in zip(saving.range_ms, fractions, strict=True):
        assert 0.8 * f * steady_ms <= saved <= steady_ms + 1e-9, (saved, f, steady_ms)
