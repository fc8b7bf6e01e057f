"""The job's findings on the report-wide impact scale (docs/multirank.md#job-findings).

Two kinds, each only where the traces support a number: the straggler (what the job would
save per step had it arrived with the others) and collectives whose bus bandwidth stays
well below the link they cross (what reaching the link's figure would save).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..findings.ranking.impact_scale import (
    Candidate,
    PriorityItem,
    Saving,
    rank_items,
)
from ..markdown_text import md_code
from .bandwidth import bus_factor
from .outside import incomplete_groups
from .records import JobAnalysis

CATEGORY = "job"
LINK_SHARES = (0.75, 0.875, 1.0)  # low / mid / high: the link's figure reached to this share
# below this a collective's time is mostly latency, not bandwidth: no bandwidth saving claimed
MIN_FINDING_BYTES = 16 * 2**20


def job_findings(a: JobAnalysis) -> list[PriorityItem]:
    """The straggler and bandwidth findings, ranked; percentages are of the median rank's
    window per step."""
    steps = a.steps or 1
    window_ms = float(np.median(a.timelines["total_us"])) / steps / 1e3
    candidates = [*_straggler(a), *_bandwidth(a)]
    return rank_items(candidates, window_ms)


def _others_exposed_comm_ms(a: JobAnalysis, skip: int | None) -> float:
    """The median exposed communication per step of the ranks other than `skip`: what the
    others could at most stop waiting."""
    t = a.timelines
    others = t[t["rank"] != skip]["exposed_comm_us"] if len(t) > 1 else t["exposed_comm_us"]
    return float(np.median(others)) / (a.steps or 1) / 1e3


def _straggler(a: JobAnalysis) -> list[Candidate]:
    late = a.straggler
    if late is None or late.held_others_us <= 0:
        return []
    steps = a.steps or 1
    mid = late.held_others_us / steps / 1e3
    explained = max((c.excess_us for c in a.causes), default=0.0) / steps / 1e3
    why = a.causes[0].label if a.causes else "its own trace shows no cause"
    title = (
        f"Rank {late.rank} holds the job back, last to arrive at {late.times_last} of "
        f"{late.collectives} collectives; why: {why}"
    )
    basis = (
        f"per {a.per}: the time the other ranks waited for rank {late.rank} alone (its "
        "arrival minus the next-latest, at each collective it was last at); low: the part its "
        "own trace explains"
    )
    saving = Saving(
        low_ms=min(explained, mid),
        mid_ms=mid,
        high_ms=mid,
        cap_ms=_others_exposed_comm_ms(a, late.rank),
        pool="exposed_comm",
        basis=basis,
    )
    return [
        Candidate(
            category=CATEGORY,
            kind="system",
            title=title,
            estimate_method="quantified",
            saving=saving,
            source_rank=1,
        )
    ]


def _bandwidth(a: JobAnalysis) -> list[Candidate]:
    """One finding per collective signature (name, size, group) of at least
    MIN_FINDING_BYTES whose bus bandwidth is below LINK_SHARES[0] of its link; capped by its
    own transfer time and by what the ranks leave exposed. Collectives whose group holds
    untraced ranks are left out: their time may be a wait for those ranks (outside.py)."""
    bw = a.bandwidth
    bw = bw[bw["link_gbps"].notna() & (bw["msg_bytes"] >= MIN_FINDING_BYTES)]
    # a group with untraced ranks: its time may be a wait for them, not a slow transfer
    partial = set(a.collectives.collectives["collective_id"][incomplete_groups(a.collectives)])
    bw = bw[~bw["collective_id"].isin(partial)]
    if bw.empty:
        return []
    steps = a.steps or 1
    cap_comm = _others_exposed_comm_ms(a, None)
    found = []
    for (name, size, ranks), rows in bw.groupby(["name", "msg_bytes", "group_size"]):
        ideal = size * bus_factor(name, int(ranks)) / (float(rows["link_gbps"].iloc[0]) * 1e3)
        latency = rows["comm_latency"].to_numpy(np.float64)
        low, mid, high = (
            float(np.clip(latency - ideal / share, 0.0, None).sum()) / steps / 1e3
            for share in LINK_SHARES
        )
        if low <= 0:
            continue
        cap = min(float(latency.sum()) / steps / 1e3, cap_comm)
        found.append(_bandwidth_candidate(rows, name, size, int(ranks), (low, mid, high, cap)))
    return found


def _bandwidth_candidate(
    rows: pd.DataFrame, name: str, size: float, ranks: int, savings: tuple[float, ...]
) -> Candidate:
    pct = float(rows["link_pct"].median())
    busbw = float(rows["busbw_gbps"].median())
    link = rows["link"].iloc[0]
    low, mid, high, cap = savings
    return Candidate(
        category=CATEGORY,
        kind="system",
        title=(
            f"{md_code(name)} of {size / 2**20:.1f} MiB over {ranks} ranks ({len(rows)}x): "
            f"{busbw:.1f} GB/s bus bandwidth, {pct:.0f} % of the {md_code(link)} link"
        ),
        estimate_method="quantified",
        saving=Saving(
            low_ms=min(low, mid),
            mid_ms=mid,
            high_ms=high,
            cap_ms=cap,
            pool="exposed_comm",
            basis="its transfer time brought to 75/87.5/100 % of the link's one-way figure",
        ),
    )
