"""The phases of a profiled window: set-up before the first iteration, warm-up iterations,
the steady state, and the tail after the last iteration.

Priorities are computed on the steady state when the window holds a warm-up, so a one-time
cost (a first `cudaFree`, module loads, first launches) is reported apart instead of as a
saving that does not exist in steady state. A steady state whose iterations keep getting
slower is said to grow, never averaged into a median that matches no iteration.
Definitions: docs/analysis.md#phases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .intervals import Intervals
from .iterations import WARMUP_MARK, Frozen, Iterations

Phase = Literal["setup", "warmup", "steady", "tail"]
PHASES: tuple[Phase, ...] = ("setup", "warmup", "steady", "tail")
# an iteration this much longer than the median of those after it is a warm-up
WARMUP_FACTOR = 1.5
# an iteration whose host time is mostly one-off calls is a warm-up, however many there are
ONE_OFF_SHARE = 0.5
# the later half of the steady iterations this much slower than the earlier half: growing
GROWTH_FACTOR = 2.0


class PhaseSummary(Frozen):
    """Which iterations are warm-up and steady, and how the steady ones behave."""

    warmup: list[int]
    steady: list[int]
    setup_ms: float  # window start to the first iteration's host start (0 without one)
    tail_ms: float  # the last iteration's host end to the window end
    growing: bool
    steady_ms: list[float]  # host time of each steady iteration, in order
    detail: str  # warm-up excluded, no steady state, growth; "" when all is steady


@dataclass(frozen=True, slots=True)
class PhaseRegions:
    """Trace-time regions of each phase; all empty but none when there are no iterations."""

    regions: dict[Phase, Intervals]
    summary: PhaseSummary | None

    @property
    def has_steady(self) -> bool:
        return self.summary is not None and bool(self.summary.steady)


def find_phases(
    iterations: Iterations, window: tuple[float, float], one_off_us: np.ndarray | None = None
) -> PhaseRegions:
    """Phases from the iterations; `one_off_us[k]`: one-off host time inside iteration k.
    Only iterations found with confidence have phases: a low-confidence period of repeating
    operators is as likely the layers of one step as steps, and its first "iteration" is no
    warm-up."""
    its = iterations.iterations
    if not its or not iterations.confident:
        return PhaseRegions({p: Intervals.empty() for p in PHASES}, None)
    start, end = iterations.host_spans_us()
    host = end - start
    marked = np.array([WARMUP_MARK.fullmatch(it.label) is not None for it in its])
    warm = _warmup(host, one_off_us if one_off_us is not None else np.zeros(len(its)), marked)
    steady = [k for k in range(len(its)) if k not in warm]
    first, last = window
    # warm-up iterations are a prefix: the four regions partition the window, the gaps between
    # iterations going to the phase around them
    begin, finish = float(start.min()), float(end.max())
    steady_from = float(start[steady[0]]) if steady else finish
    regions: dict[Phase, Intervals] = {
        "setup": _span(first, min(begin, last)),
        "warmup": _span(max(begin, first), min(steady_from, last)),
        "steady": _span(max(steady_from, first), min(finish, last)),
        "tail": _span(max(finish, first), last),
    }
    steady_ms = [float(host[k]) / 1e3 for k in steady]
    growing = _growing(np.array(steady_ms))
    summary = PhaseSummary(
        warmup=warm,
        steady=steady,
        setup_ms=max(0.0, float(start.min() - first)) / 1e3,
        tail_ms=max(0.0, float(last - end.max())) / 1e3,
        growing=growing,
        steady_ms=steady_ms,
        detail=_detail(warm, steady_ms, growing, host),
    )
    return PhaseRegions(regions, summary)


def _span(a: float, b: float) -> Intervals:
    return Intervals(np.array([a]), np.array([b])) if b > a else Intervals.empty()


def _warmup(host: np.ndarray, one_off: np.ndarray, marked: np.ndarray) -> list[int]:
    """The leading iterations that are warm-up: marked so by the benchmark, far slower than
    the rest, or mostly one-off."""
    warm: list[int] = []
    for k in range(len(host)):
        mostly_one_off = host[k] > 0 and one_off[k] / host[k] >= ONE_OFF_SHARE
        rest = host[k + 1 :]
        slower = len(rest) > 0 and host[k] > WARMUP_FACTOR * float(np.median(rest))
        if not (bool(marked[k]) or mostly_one_off or slower):
            break
        warm.append(k)
    return warm


def _growing(steady_ms: np.ndarray) -> bool:
    if len(steady_ms) < 3:
        return False
    half = len(steady_ms) // 2
    early = float(np.median(steady_ms[:half]))
    late = float(np.median(steady_ms[half:]))
    return early > 0 and late >= GROWTH_FACTOR * early


def _detail(warm: list[int], steady_ms: list[float], growing: bool, host: np.ndarray) -> str:
    parts = []
    if warm:
        shown = ", ".join(f"{host[k] / 1e3:,.1f} ms" for k in warm)
        parts.append(f"{len(warm)} warm-up iteration(s) ({shown}) excluded")
    if not steady_ms:
        parts.append("no steady-state iteration: the window is warm-up only")
    elif growing:
        parts.append(
            f"the steady iterations grow: {steady_ms[0]:,.1f} ms at first, "
            f"{steady_ms[-1]:,.1f} ms at the end (each: "
            + ", ".join(f"{v:,.1f}" for v in steady_ms)
            + " ms)"
        )
    return "; ".join(parts)  # nothing to say of a window that is all steady state
