"""Impact estimates per operation and their P-item groups.

See docs/analysis.md#impact-estimates and docs/analysis.md#p-item-findings.

All scores are % of the end-to-end GPU time. In a comparative run only measured gaps count:
the efficiency is set against trace 2's time (categories/comparative.py), there is no
heuristic estimate, and findings group by bound and library alone (`eff_bucket` "all").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .models import Finding, ImpactEstimate, Operation

TARGET_HIGH, TARGET_MID, TARGET_LOW = 100.0, 87.5, 75.0
HEURISTIC_LOW, HEURISTIC_MID, HEURISTIC_HIGH = 0.15, 0.30, 0.45
MIN_IMPACT_SCORE = 0.01  # per quantified op, on impact_score_high
MIN_PITEM_IMPACT_SCORE = 0.5  # per finding, on the summed mid score
SCORES = ("impact_score", "impact_score_low", "impact_score_high")
COMPARATIVE_BUCKET = "all"  # comparative findings group by bound and library only


def estimate(
    op: Operation, category: str, baseline: float | None, *, comparative: bool = False
) -> ImpactEstimate | None:
    """Quantified when the op has a sane efficiency, else (standalone only) heuristic on its
    share of E2E."""
    time_ms = op.time_ms
    if op.fusion_flagged or time_ms <= 0:
        return None
    eff = op.efficiency
    library = op.library
    if eff.efficiency_percent is not None and not eff.is_anomaly and baseline and baseline > 0:
        gap_high = max(0.0, 1 - eff.efficiency_percent / TARGET_HIGH)
        share = time_ms / baseline * 100
        high = gap_high * share
        if high < MIN_IMPACT_SCORE:
            return None
        return ImpactEstimate(
            operation=op.name,
            category=category,
            type="kernel_tuning",
            estimate_method="quantified",
            impact_score=round(gap_high * TARGET_MID / TARGET_HIGH * share, 2),
            impact_score_low=round(gap_high * TARGET_LOW / TARGET_HIGH * share, 2),
            impact_score_high=round(high, 2),
            efficiency_pct=eff.efficiency_percent,
            bound_type=eff.bound_type,
            library=library,
            time_ms=time_ms,
        )
    pct = op.percent_of_total
    if comparative or pct is None or pct <= 0:
        return None
    return ImpactEstimate(
        operation=op.name,
        category=category,
        type="unmodeled_significant",
        estimate_method="heuristic",
        impact_score=round(HEURISTIC_MID * pct, 2),
        impact_score_low=round(HEURISTIC_LOW * pct, 2),
        impact_score_high=round(HEURISTIC_HIGH * pct, 2),
        efficiency_pct=None,
        bound_type=None,
        library=library,
        time_ms=time_ms,
        percent_of_total=pct,
    )


def impact_estimates(
    operations: Iterable[Operation],
    category: str,
    baseline: float | None,
    *,
    comparative: bool = False,
) -> tuple[ImpactEstimate, ...]:
    """One estimate per op that earns one, highest mid score first."""
    found = [
        e
        for op in operations
        if (e := estimate(op, category, baseline, comparative=comparative)) is not None
    ]
    return tuple(sorted(found, key=lambda e: -e.impact_score))


def _kept(members: list[ImpactEstimate], mid: float) -> bool:
    return mid >= MIN_PITEM_IMPACT_SCORE


def _judged_floor(judged_ms: float) -> Callable[[list[ImpactEstimate], float], bool]:
    def kept(members: list[ImpactEstimate], mid: float) -> bool:
        saving_ms = sum(_mid_ms(m) for m in members)
        return judged_ms > 0 and saving_ms / judged_ms * 100 >= MIN_PITEM_IMPACT_SCORE

    return kept


def _mid_ms(e: ImpactEstimate) -> float:
    """An estimate's mid saving in ms, unrounded: its kernel time times the mid fraction."""
    if e.estimate_method == "quantified" and e.efficiency_pct is not None:
        return max(0.0, 1 - e.efficiency_pct / TARGET_HIGH) * TARGET_MID / TARGET_HIGH * e.time_ms
    return HEURISTIC_MID * e.time_ms


def eff_bucket(efficiency_pct: float | None) -> str:
    if efficiency_pct is None:
        return "unknown"
    if efficiency_pct < 30:
        return "0-30"
    return "30-60" if efficiency_pct < 60 else "60-100"


def category_findings(
    estimates: Iterable[ImpactEstimate],
    *,
    comparative: bool = False,
    judged_ms: float | None = None,
) -> tuple[Finding, ...]:
    """Group, sum, drop groups under 0.5 % (mid) of the window, rank by mid score.

    With `judged_ms` (the judged window, when the window's set-up, warm-up or tail idle is
    excluded) a group is kept when its unrounded mid saving is 0.5 % of the
    judged window: scores rounded to 0.01 % of a window that is mostly warm-up are too coarse
    to set against a floor 50 times smaller."""
    kept = _kept if judged_ms is None else _judged_floor(judged_ms)
    groups: dict[tuple[Any, ...], list[ImpactEstimate]] = {}
    for e in estimates:
        if e.estimate_method == "quantified":
            key: tuple[Any, ...] = (
                "q",
                e.bound_type or "unknown",
                e.library or "Unknown",
                COMPARATIVE_BUCKET if comparative else eff_bucket(e.efficiency_pct),
            )
        else:
            key = ("h", e.operation)
        groups.setdefault(key, []).append(e)
    drafts = []
    for key, members in groups.items():
        members = sorted(members, key=lambda e: -e.impact_score)
        sums = {s: sum(getattr(m, s) for m in members) for s in SCORES}
        if not kept(members, sums["impact_score"]):
            continue
        if key[0] == "q":
            head = {
                "bound_type": key[1],
                "library": key[2],
                "eff_bucket": key[3],
                "estimate_method": "quantified",
            }
        else:
            library = next((m.library for m in members if m.library), None) or "Unknown"
            pct = sum(m.percent_of_total or 0.0 for m in members)
            head = {
                "bound_type": "unmodeled",
                "library": library,
                "eff_bucket": "unknown",
                "estimate_method": "heuristic",
                "percent_of_total": round(pct, 2),
            }
        drafts.append({**head, **{s: round(v, 2) for s, v in sums.items()}, "members": members})
    drafts.sort(key=lambda d: -d["impact_score"])
    return tuple(
        Finding(rank=rank, member_count=len(d["members"]), **{**d, "members": tuple(d["members"])})
        for rank, d in enumerate(drafts, 1)
    )
