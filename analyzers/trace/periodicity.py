"""The period of a sequence of operator names: how many top-level operators one step holds.

Used by iterations.py when a trace marks no `ProfilerStep#N`. The score of a period `p` is
the share of positions `i` with `seq[i] == seq[i + p]`; the period chosen scores best, the
smallest on a tie. A multiple of the true period ties with it on an exactly periodic
sequence and scores lower once anything breaks the pattern (an extra or a changed operator
costs a multiple more mismatches); a sub-period such as one layer of a model mismatches at
every step boundary. The phase keeps as many
whole periods as the sequence holds (a recording usually starts near a step boundary) and,
among those, follows the longest host pause: steps usually begin after the host did
something else (loading the next batch). See docs/analysis.md#iterations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_PERIOD_SCORE = 0.8  # below this the sequence is not considered repeating
SCORE_TIE = 1e-9  # scores this close are a tie: the smaller period wins
EXHAUSTIVE_PERIODS = 2048  # every period up to this is scored; longer ones from recurrences
RECURRENCE_CANDIDATES = 256  # most frequent distances between repeats of one name


@dataclass(frozen=True, slots=True)
class Period:
    """`length` operators per step, the first step starting at position `phase`."""

    length: int
    phase: int
    score: float  # share of positions that repeat one period later
    repeats: int  # whole periods from `phase` on


def period_score(codes: np.ndarray, p: int) -> float:
    """Share of positions whose code recurs exactly `p` positions later."""
    if p <= 0 or p >= len(codes):
        return 0.0
    return float(np.mean(codes[:-p] == codes[p:]))


def _candidates(codes: np.ndarray) -> np.ndarray:
    n = len(codes)
    limit = n // 2
    small = np.arange(1, min(limit, EXHAUSTIVE_PERIODS) + 1)
    # distances between consecutive occurrences of the same name: an operator that runs
    # once per step recurs exactly one period later
    order = np.lexsort((np.arange(n), codes))
    same = codes[order][1:] == codes[order][:-1]
    gaps = (order[1:] - order[:-1])[same]
    gaps = gaps[(gaps > EXHAUSTIVE_PERIODS) & (gaps <= limit)]
    values, counts = np.unique(gaps, return_counts=True)
    frequent = values[np.argsort(-counts, kind="stable")[:RECURRENCE_CANDIDATES]]
    return np.union1d(small, frequent)


def _phase(gap_before: np.ndarray, p: int) -> int:
    """Among the phases keeping the most whole periods, the one after the longest host pause.

    The pause before a phase is its median over the periods.
    """
    n = len(gap_before)
    padded = np.full(-(-n // p) * p, np.nan)
    padded[:n] = gap_before
    padded[0] = np.nan  # nothing precedes the first operator
    table = padded.reshape(-1, p)
    filled = ~np.isnan(table).all(axis=0)
    medians = np.full(p, -np.inf)
    medians[filled] = np.nanmedian(table[:, filled], axis=0)
    most_repeats = n - (n // p) * p + 1  # phases 0 .. n mod p keep n // p whole periods
    return int(np.argmax(medians[:most_repeats]))


def find_period(codes: np.ndarray, start: np.ndarray, end: np.ndarray) -> Period | None:
    """The repeating period of `codes` (operators in start order), or None.

    `start`/`end` are the operators' host times, used only to place the phase.
    """
    codes = np.asarray(codes)
    if len(codes) < 4:
        return None
    candidates = _candidates(codes)
    scores = np.array([period_score(codes, int(p)) for p in candidates])
    best = float(scores.max()) if len(scores) else 0.0
    if best < MIN_PERIOD_SCORE:
        return None
    p = int(candidates[np.flatnonzero(scores >= best - SCORE_TIE)[0]])
    reach = np.maximum.accumulate(end)
    gap_before = np.empty(len(codes))
    gap_before[0] = np.nan
    gap_before[1:] = start[1:] - reach[:-1]
    phase = _phase(gap_before, p)
    repeats = (len(codes) - phase) // p
    if repeats < 2:
        return None
    return Period(length=p, phase=phase, score=period_score(codes, p), repeats=repeats)
