"""A regression gate: is the judged trace slower than the reference by more than a threshold,
beyond the run-to-run noise its own iterations show? (docs/compare.md#a-regression-gate)

Each trace's step times are its steady iterations' host spans (`ProfilerStep#` spans, warm-up
left out: trace/phases.py). The difference is the ratio of the two medians, less one; its 95 %
confidence interval is a percentile bootstrap (both traces' iterations resampled with
replacement, a fixed seed, `RESAMPLES` times). The gate fails only when the interval's lower
end is above the threshold: a slowdown the noise could explain never fails a build. With
fewer than `MIN_ITERATIONS` steady iterations in a trace there is no noise to measure: the
point estimate decides and the verdict says so. The top contributors are the operators (and
their categories) whose GPU time per step grew most.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..perf.categories import CategoryTable, default_table
from ..trace.iterations import find_iterations
from ..trace.model import TraceModel
from ..trace.phases import find_phases
from .comparability import Comparability, comparability

RESAMPLES = 2_000
CONFIDENCE = 0.95
MIN_ITERATIONS = 3
TOP_CONTRIBUTORS = 5
SEED = 0

Verdict = Literal["regression", "not beyond noise", "no change above noise", "faster"]
METHOD = (
    f"percentile bootstrap of the ratio of the median steady iterations, {RESAMPLES:,} "
    f"resamples, {CONFIDENCE:.0%} interval"
)


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepStats(Frozen):
    """One trace's steady step times, ms."""

    trace: str
    iterations: int
    median_ms: float
    p10_ms: float
    p90_ms: float
    steps_ms: list[float]


class Contributor(Frozen):
    operator: str  # trace text
    category: str
    added_ms_per_step: float


class CategoryContributor(Frozen):
    category: str
    added_ms_per_step: float


class GateVerdict(Frozen):
    """`slowdown_pct`: trace 1 (new) against trace 2 (base), positive when slower. The
    comparability score is reported, never used to pass or fail: a gate decides by its
    threshold alone, and the score tells a reader whether the two runs were like for like."""

    new: StepStats
    base: StepStats
    threshold_pct: float
    slowdown_pct: float
    ci_low_pct: float | None  # None: too few iterations to measure the noise
    ci_high_pct: float | None
    method: str
    verdict: Verdict
    passed: bool
    reason: str
    contributors: list[Contributor]
    categories: list[CategoryContributor]
    comparability_score: int
    comparability: list[str]  # the reasons (trace text in operator names)


def gate_verdict(
    new: TraceModel,
    base: TraceModel,
    threshold_pct: float,
    *,
    names: tuple[str, str] = ("trace 1", "trace 2"),
    categories: CategoryTable | None = None,
    alike: Comparability | None = None,
) -> GateVerdict:
    """The verdict on `new` against `base` at `threshold_pct` (see the module docstring);
    `alike`: their comparability when the caller has it already."""
    a, b = _steps(new), _steps(base)
    stats_new, stats_base = _stats(names[0], a), _stats(names[1], b)
    slowdown = 100.0 * (np.median(a) / np.median(b) - 1.0) if len(a) and len(b) else 0.0
    low = high = None
    if len(a) >= MIN_ITERATIONS and len(b) >= MIN_ITERATIONS:
        low, high = _interval(a, b)
    verdict, reason = _judge(slowdown, low, high, threshold_pct)
    alike = comparability(new, base) if alike is None else alike
    by_operator, by_category = _contributors(new, base, categories or default_table())
    return GateVerdict(
        new=stats_new,
        base=stats_base,
        threshold_pct=threshold_pct,
        slowdown_pct=round(float(slowdown), 3),
        ci_low_pct=None if low is None else round(low, 3),
        ci_high_pct=None if high is None else round(high, 3),
        method=METHOD if low is not None else "point estimate (too few iterations for noise)",
        verdict=verdict,
        passed=verdict != "regression",
        reason=reason,
        contributors=by_operator,
        categories=by_category,
        comparability_score=alike.score,
        comparability=list(alike.reasons),
    )


def _steps(model: TraceModel) -> np.ndarray:
    """Steady iterations' host spans, ms (all marked ones when no warm-up is found; the
    window as one step when none is marked)."""
    iterations = find_iterations(model)
    marked = [it for it in iterations.iterations if not it.open_end and it.host_ms > 0]
    if not marked:
        ev = model.recorded
        ts, dur = ev["ts"].to_numpy(float), np.nan_to_num(ev["dur"].to_numpy(float))
        return np.asarray([(np.max(ts + dur) - np.min(ts)) / 1e3])
    gpu = model.gpu
    window = (float(gpu["ts"].min()), float((gpu["ts"] + gpu["dur"]).max())) if len(gpu) else (0, 0)
    phases = find_phases(iterations, window).summary
    steady = set(phases.steady) if phases is not None and phases.steady else None
    its = iterations.iterations
    chosen = [its[k] for k in steady] if steady else marked
    return np.asarray([it.host_ms for it in chosen if not it.open_end and it.host_ms > 0])


def _stats(name: str, steps: np.ndarray) -> StepStats:
    return StepStats(
        trace=name,
        iterations=len(steps),
        median_ms=round(float(np.median(steps)), 4),
        p10_ms=round(float(np.percentile(steps, 10)), 4),
        p90_ms=round(float(np.percentile(steps, 90)), 4),
        steps_ms=[round(float(s), 4) for s in steps],
    )


def _interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    rng = np.random.default_rng(SEED)
    ma = np.median(rng.choice(a, (RESAMPLES, len(a))), axis=1)
    mb = np.median(rng.choice(b, (RESAMPLES, len(b))), axis=1)
    ratios = 100.0 * (ma / mb - 1.0)
    tail = (1 - CONFIDENCE) / 2 * 100
    return float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))


def _judge(
    slowdown: float, low: float | None, high: float | None, threshold: float
) -> tuple[Verdict, str]:
    if low is None or high is None:
        if slowdown > threshold:
            return "regression", (
                f"{slowdown:.1f} % slower, above {threshold:g} % (too few steady iterations "
                "to measure the noise: the point estimate decides)"
            )
        return (
            "no change above noise",
            f"{slowdown:+.1f} %, within {threshold:g} % (no noise measured)",
        )
    span = f"{slowdown:+.1f} % ({low:+.1f} to {high:+.1f} %)"
    if low > threshold:
        return "regression", f"{span}: slower by more than {threshold:g} % beyond the noise"
    if high < 0:
        return "faster", f"{span}: faster beyond the noise"
    if slowdown > 0:
        return "not beyond noise", (
            f"{span}: slower, but not by more than {threshold:g} % beyond the noise"
        )
    return "no change above noise", f"{span}: no change above noise"


def _contributors(
    new: TraceModel, base: TraceModel, table: CategoryTable
) -> tuple[list[Contributor], list[CategoryContributor]]:
    """Operators (their launching operator's name) and categories whose GPU time per step
    grew most."""
    change = _per_step(new, table).sub(_per_step(base, table), fill_value=0.0)
    grown = change.sort_values(ascending=False, kind="stable")
    grown = grown[grown > 0].head(TOP_CONTRIBUTORS)
    operators = [
        Contributor(operator=op, category=cat, added_ms_per_step=round(float(ms), 4))
        for (op, cat), ms in grown.items()
    ]
    by_category = change.groupby(level="category").sum().sort_values(ascending=False)
    by_category = by_category[by_category > 0].head(TOP_CONTRIBUTORS)
    categories = [
        CategoryContributor(category=str(cat), added_ms_per_step=round(float(ms), 4))
        for cat, ms in by_category.items()
    ]
    return operators, categories


def _per_step(model: TraceModel, table: CategoryTable) -> pd.Series:
    """GPU ms per step by (launching operator, category); absent operators count 0."""
    gpu = model.gpu
    steps = max(1, len([it for it in find_iterations(model).iterations if not it.open_end]))
    launcher = gpu["launcher"].to_numpy()
    names = np.where(launcher >= 0, model.names[np.maximum(launcher, 0)], None)
    ops = pd.Series([str(n) if n is not None else "(no operator)" for n in names], index=gpu.index)
    kernels = gpu["name"].astype(str)
    frame = pd.DataFrame({"op": ops, "kernel": kernels, "ms": gpu["dur"].to_numpy(float) / 1e3})
    first = frame.groupby("op")["kernel"].first()
    cats = {op: table.category(op, k) for op, k in first.items()}
    frame["category"] = frame["op"].map(cats)
    return frame.groupby(["op", "category"])["ms"].sum() / steps
