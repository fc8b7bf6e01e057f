"""Why a rank is the straggler: what its own trace shows more of than the other ranks'
(docs/multirank.md#why-a-rank-is-late).

Each cause is the straggler's figure minus the median of the other ranks', over the whole
trace: GPU compute (more work, or slower work), one operation's GPU time (a slow kernel), GPU
idle time (the host did not feed the GPU) and host time in data loading (late data). A cause
is named only when it is at least a tenth of what the straggler cost the others, so noise
between ranks is not offered as an explanation, and only when no other rank has as much of it
(a rank that idles more and still arrives earlier shows idle time is not why the straggler is
late: such a figure is kept as ruled out, with the ranks that have more). A slow operation
behind most of the extra compute is named with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..markdown_text import md_code
from .summary import RankSummary

CauseKind = Literal["compute", "slow_op", "host_idle", "late_data"]
MIN_SHARE = 0.1  # of the time the straggler held the others, for a cause to be named
LABELS: dict[CauseKind, str] = {
    "compute": "more GPU compute",
    "slow_op": "a slower operation",
    "host_idle": "more GPU idle time, the host not keeping its GPU fed",
    "late_data": "longer data loading, a late batch",
}


@dataclass(frozen=True, slots=True)
class Cause:
    """What the straggler had more of than the median of the other ranks (µs, whole trace)."""

    kind: CauseKind
    excess_us: float
    straggler_us: float
    median_us: float
    op: str = ""  # the operation, for a slow_op cause
    # other ranks with at least as much of it (rank, µs): then it does not explain the delay
    outdone_by: tuple[tuple[int, float], ...] = ()

    @property
    def label(self) -> str:
        """The cause in words (Markdown: the operation, trace text, is a code span)."""
        if not self.op:
            return LABELS[self.kind]
        joint = ", most of it in" if self.kind == "compute" else ":"
        return f"{LABELS[self.kind]}{joint} {md_code(self.op)}"


def straggler_causes(
    slow: RankSummary, others: Sequence[RankSummary], held_us: float
) -> tuple[Cause, ...]:
    """The causes its trace supports, largest excess first (empty when none reaches
    MIN_SHARE of `held_us`, or when there are no other ranks to compare with); a figure some
    other rank has as much of is never one."""
    return tuple(c for c in _candidates(slow, others, held_us) if not c.outdone_by)


def ruled_out_causes(
    slow: RankSummary, others: Sequence[RankSummary], held_us: float
) -> tuple[Cause, ...]:
    """Figures well above the other ranks' median that still do not explain the delay: some
    rank that did not hold the job back has as much (what the table beside them shows)."""
    return tuple(c for c in _candidates(slow, others, held_us) if c.outdone_by)


def _candidates(
    slow: RankSummary, others: Sequence[RankSummary], held_us: float
) -> tuple[Cause, ...]:
    if not others:
        return ()
    measures: list[tuple[CauseKind, Callable[[RankSummary], float]]] = [
        ("compute", lambda s: s.timeline.compute_us),
        ("host_idle", lambda s: s.timeline.idle_us),
        ("late_data", lambda s: s.data_loading_us),
    ]
    found = [_compare(kind, measure, slow, others) for kind, measure in measures]
    found.append(_slowest_op(slow, others))
    floor = max(MIN_SHARE * held_us, 0.0)
    named = [c for c in found if c is not None and c.excess_us > floor]
    return tuple(sorted(_joined(named), key=lambda c: -c.excess_us))


def _joined(causes: list[Cause]) -> list[Cause]:
    """A slow operation that accounts for at least half of the extra compute is named with
    the compute, not as a second cause."""
    kinds = {c.kind: c for c in causes}
    compute, op = kinds.get("compute"), kinds.get("slow_op")
    if compute is None or op is None or op.excess_us < 0.5 * compute.excess_us:
        return causes
    merged = Cause("compute", compute.excess_us, compute.straggler_us, compute.median_us, op.op)
    return [merged if c is compute else c for c in causes if c is not op]


def _compare(
    kind: CauseKind,
    measure: Callable[[RankSummary], float],
    slow: RankSummary,
    others: Sequence[RankSummary],
) -> Cause:
    median = float(np.median([measure(s) for s in others]))
    mine = measure(slow)
    more = tuple(sorted((s.rank, measure(s)) for s in others if measure(s) >= mine))
    return Cause(
        kind=kind, excess_us=mine - median, straggler_us=mine, median_us=median, outdone_by=more
    )


def _slowest_op(slow: RankSummary, others: Sequence[RankSummary]) -> Cause | None:
    """The top operation of the straggler with the largest excess over the other ranks that
    list it too (at least half of them, so a median means something)."""
    best = None
    for op in slow.top_ops:
        times = [t.gpu_us for s in others for t in s.top_ops if t.name == op.name]
        if len(times) * 2 < len(others):
            continue
        median = float(np.median(times))
        more = tuple(
            sorted(
                (s.rank, t.gpu_us)
                for s in others
                for t in s.top_ops
                if t.name == op.name and t.gpu_us >= op.gpu_us
            )
        )
        cause = Cause("slow_op", op.gpu_us - median, op.gpu_us, median, op.name, more)
        if best is None or cause.excess_us > best.excess_us:
            best = cause
    return best
