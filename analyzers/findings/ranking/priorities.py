"""`priority_data.json`: rank every finding on one scale and build the Top Operations rows.

Inputs are the metrics of every analysed category (in their files' name order) and the
manifest. One set of numbers per run (docs/analysis.md#priorities): `priorities` is the ranking
the report shows, every finding (compute, kernel fusion, system) P-numbered on the impact scale,
with `saving_totals` and `failed_categories`. TraceLens's compute-only lists (its `priorities`,
i.e. the report's Top Operations rows, `recommendations`, `findings`, `all_estimates`) sit
together under `tracelens_compute`, in the reference layout, so a consumer reading the obvious
key gets the report's P1 and never a compute-only rank (docs/deviations.md). A document in the
earlier layout (TraceLens's lists at the top, the ranking under `items`) still reads.

The TraceLens lists carry three fixes:

* `recommendations[].operation_count` is the sum of `member_count` over the quantified findings
  rolled up into that row (the reference summed a key findings never carry, so it was always 0).
* A category whose findings are all heuristic still gets a Top Operations row. Choice: such
  categories get `source: "findings_heuristic"` rows whose `impact_score` / `_low` / `_high` are
  the sums of their heuristic findings' values (2 dp), sorted by that mid value descending. They
  are listed after the quantified `findings_rollup` rows and before the `manifest_fallback` rows,
  are not limited by `max_recommendations` (that cap applies to quantified rollups only) and are
  not added to `recommendations[]`, which stays a list of quantified savings for the plots.
* Failures are reported, never swallowed. A category whose status is `ERROR` / `NO_DATA` is
  skipped and listed in `failed_categories[]` as `{category, status, message}`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, model_serializer, model_validator

from ...categories.any_metrics import Metrics
from ...categories.kernel_fusion import KernelFusionMetrics
from ...categories.models import CategoryMetrics, Finding
from ...prepare.manifest import Manifest
from .candidates import candidates, shared_kernels
from .finding_ranges import located
from .impact_scale import (
    Candidate,
    PriorityItem,
    Saving,
    SavingTotals,
    nothing_to_rank,
    rank_items,
    totals,
)
from .replay_figures import CriticalPathView, PricedItem, ReplaySummary
from .replay_price import ReplayInputs, ReplayPricer
from .run_metrics import RunMetrics

FALLBACK_SHARE = 0.05
SKIPPED_STATUSES = ("ERROR", "NO_DATA")


class RankedFinding(BaseModel):
    """A category's finding with its category and its rank across the run. Written flat:
    the finding's own fields, its `rank` as `category_rank`, then `category`, `global_rank`."""

    finding: Finding
    category: str
    global_rank: int = 0

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """Read back the flat form `_flat` writes, so `priority_data.json` parses again."""
        if not isinstance(data, Mapping) or "finding" in data:
            return data
        flat = dict(data)
        category = flat.pop("category", None)
        global_rank = flat.pop("global_rank", 0)
        flat["rank"] = flat.pop("category_rank", flat.get("rank"))
        return {"finding": flat, "category": category, "global_rank": global_rank}

    @property
    def category_rank(self) -> int:
        return self.finding.rank

    @property
    def estimate_method(self) -> str:
        return self.finding.estimate_method

    @property
    def impact_score(self) -> float:
        return self.finding.impact_score

    @model_serializer(mode="plain")
    def _flat(self) -> dict[str, Any]:
        data = self.finding.document()
        rank = data.pop("rank")
        return {**data, "category": self.category, "category_rank": rank,
                "global_rank": self.global_rank}  # fmt: skip


class RollupPriority(BaseModel):
    """A Top Operations row backed by findings (quantified rollup or heuristic-only category)."""

    rank: int
    category: str
    display_name: str
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    source: Literal["findings_rollup", "findings_heuristic"]


class FallbackPriority(BaseModel):
    """A Top Operations row for a time-heavy compute category without any finding."""

    rank: int
    category: str
    display_name: str
    impact_score: None = None
    gpu_kernel_time_ms: float
    source: Literal["manifest_fallback"] = "manifest_fallback"


class Recommendation(BaseModel):
    category: str
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    operation_count: int
    type: Literal["kernel_tuning"] = "kernel_tuning"


class FailedCategory(BaseModel):
    category: str
    status: str
    message: str


TRACELENS_KEY = "tracelens_compute"
TRACELENS_LISTS = ("priorities", "recommendations", "findings", "all_estimates")


def earlier_layout(data: Mapping[str, Any]) -> bool:
    """Whether a document was written before the ranking took the `priorities` key: the
    ranking under `items`, TraceLens's lists at the top level."""
    if TRACELENS_KEY in data:
        return False
    return "items" in data or any(k in data for k in TRACELENS_LISTS[1:])


def current_layout(data: Mapping[str, Any]) -> dict[str, Any]:
    """The document in the current layout (a copy; the earlier layout moved over)."""
    if not earlier_layout(data):
        return dict(data)
    moved = dict(data)
    compute = {k: moved.pop(k) for k in TRACELENS_LISTS if k in moved}
    moved["priorities"] = moved.pop("items", [])
    return {**moved, TRACELENS_KEY: compute}


class TraceLensCompute(BaseModel):
    """TraceLens's compute-only lists, in its layout: `priorities` are the Top Operations rows
    (categories ranked by summed roofline saving, then the time-heavy ones without a finding)."""

    priorities: list[RollupPriority | FallbackPriority] = []
    recommendations: list[Recommendation] = []
    findings: list[RankedFinding] = []
    all_estimates: list[dict[str, Any]] = []


class PriorityData(BaseModel):
    baseline_ms: float
    # every finding (compute, fusion, system) on one scale, numbered once for the report
    priorities: list[PriorityItem] = []
    saving_totals: SavingTotals | None = None
    # why nothing is ranked (a window too short to rank, impact_scale.nothing_to_rank)
    nothing_to_rank: str | None = None
    failed_categories: list[FailedCategory] = []
    tracelens_compute: TraceLensCompute = TraceLensCompute()
    # the identity replay, the critical path and the top fixes together (None: not replayed)
    replay: ReplaySummary | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_earlier_layout(cls, data: Any) -> Any:
        return current_layout(data) if isinstance(data, Mapping) else data

    @property
    def items(self) -> list[PriorityItem]:
        """The ranking (`priorities`), under the name earlier code used."""
        return self.priorities

    def critical_path_view(self) -> CriticalPathView | None:
        """What the replay says of the run and of each finding (None: not replayed)."""
        if self.replay is None:
            return None
        placed = [
            PricedItem(p_number=i.p_number, category=i.category, kind=i.kind,
                       on_path=i.replay.on_path, price=i.replay)
            for i in self.priorities if i.replay is not None
        ]  # fmt: skip
        return CriticalPathView(replay=self.replay, findings=placed)

    @property
    def top_operations(self) -> list[RollupPriority | FallbackPriority]:
        """TraceLens's `priorities`: the report's Top Operations rows."""
        return self.tracelens_compute.priorities


@dataclass
class _Rollup:
    category: str
    mid: float = 0.0
    low: float = 0.0
    high: float = 0.0
    members: int = 0


def _read_metrics(
    key: str, metrics: Metrics
) -> tuple[str, list[dict[str, Any]], list[RankedFinding]] | FailedCategory:
    """(category, estimates as written in its metrics file, findings without global rank) or
    why the metrics are unusable."""
    named = isinstance(metrics, CategoryMetrics | KernelFusionMetrics)
    category = str((metrics.category if named else None) or key)
    if metrics.status in SKIPPED_STATUSES:
        said = metrics.message if isinstance(metrics, CategoryMetrics) else None
        message = metrics.error or said or f"metrics status is {metrics.status}"
        return FailedCategory(category=category, status=metrics.status, message=str(message))
    own = metrics.category_findings if isinstance(metrics, CategoryMetrics) else None
    findings = [RankedFinding(finding=f, category=category) for f in own or ()]
    return category, _estimate_documents(metrics), findings


def _estimate_documents(metrics: Metrics) -> list[dict[str, Any]]:
    """Each impact estimate as its metrics file writes it (priority_data lists them all)."""
    if isinstance(metrics, CategoryMetrics):
        return [e.document() for e in metrics.impact_estimates or ()]
    if isinstance(metrics, KernelFusionMetrics):
        return [e.model_dump(mode="json") for e in metrics.impact_estimates or ()]
    return list(metrics.impact_estimates or ())  # system analyses: always empty


def _rollups(findings: list[RankedFinding], method: str) -> list[_Rollup]:
    """Per-category sums of `method` findings, ordered by summed mid desc (stable on first seen)."""
    by_category: dict[str, _Rollup] = {}
    for finding in findings:
        if finding.estimate_method != method:
            continue
        roll = by_category.setdefault(finding.category, _Rollup(category=finding.category))
        roll.mid += finding.impact_score
        roll.low += finding.finding.impact_score_low
        roll.high += finding.finding.impact_score_high
        roll.members += finding.finding.member_count
    return sorted(by_category.values(), key=lambda r: r.mid, reverse=True)


def priority_data(
    manifest: Manifest,
    metrics: Mapping[str, Metrics],
    max_recommendations: int = 6,
    replayed: ReplayInputs | None = None,
    avoidable: Mapping[str, float] | None = None,
) -> PriorityData:
    """Rank the findings of every analysed category (`metrics`: key -> its metrics); with
    `replayed` (the trace and its attribution), each expressible finding is priced by the
    replay (replay_price.py); with `avoidable` (a comparative run: per pool, the ms of trace
    1 that trace 2 does without), a system item saves no more than that."""
    metrics = RunMetrics.of(metrics)  # typed once for the candidates and the shared kernels
    gpu = manifest.gpu_utilization
    baseline_ms = gpu.total_time_ms
    display = {c.name: c.display_name or c.name for c in manifest.categories}

    all_estimates: list[dict[str, Any]] = []
    findings: list[RankedFinding] = []
    failed: list[FailedCategory] = []
    for key in sorted(metrics, key=lambda k: f"{k}_metrics.json"):  # the files' order
        result = _read_metrics(key, metrics[key])
        if isinstance(result, FailedCategory):
            failed.append(result)
            continue
        _, estimates, category_findings = result
        all_estimates.extend(estimates)
        findings.extend(category_findings)

    findings = sorted(findings, key=lambda f: f.impact_score, reverse=True)
    for index, finding in enumerate(findings, start=1):
        finding.global_rank = index

    top_ops, recommendations = _rollup_rows(findings, display, max_recommendations)
    top_ops += _fallback_rows(manifest, findings, display, start=len(top_ops) + 1)
    reason = nothing_to_rank(gpu)
    pricer = None if replayed is None else ReplayPricer(replayed.model, metrics, replayed.unified)
    found = [] if reason else candidates(metrics, gpu, display)
    if pricer is not None:
        found = pricer.priced(found)
    found = located(
        found,
        metrics,
        replayed.model if replayed is not None else None,
        pricer.events_of if pricer is not None else lambda _: None,
    )
    if avoidable is not None:
        found = [c for c in (within_reference(c, avoidable) for c in found) if c is not None]
    items = rank_items(found, baseline_ms)
    return PriorityData(
        baseline_ms=baseline_ms,
        priorities=items,
        saving_totals=totals(items, gpu, shared_kernels(metrics, items)),
        nothing_to_rank=reason,
        failed_categories=failed,
        tracelens_compute=TraceLensCompute(
            priorities=top_ops,
            recommendations=recommendations,
            findings=findings,
            all_estimates=all_estimates,
        ),
        replay=None if pricer is None else pricer.summary(items),
    )


# the system comparison's pool names -> the impact scale's
REFERENCE_POOLS = {
    "idle": "idle",
    "exposed_copies": "exposed_memcpy",
    "exposed_comm": "exposed_comm",
}


def within_reference(c: Candidate, avoidable: Mapping[str, float]) -> Candidate | None:
    """A system item capped at what trace 2 shows avoidable in its pool: the reference runs
    without the rest, so no more of it is the difference between the traces; None (no
    item) when trace 2 shows none of it avoidable."""
    pools = {REFERENCE_POOLS[k]: ms for k, ms in avoidable.items() if k in REFERENCE_POOLS}
    s = c.saving
    if s is None or s.pool not in pools or pools[s.pool] >= s.cap_ms:
        return c
    cap = pools[s.pool]
    if cap <= 0:
        return None
    basis = f"{s.basis}; at most {cap:.2f} ms, what trace 2 shows avoidable"
    capped = Saving(
        low_ms=s.low_ms, mid_ms=s.mid_ms, high_ms=s.high_ms, cap_ms=cap, pool=s.pool, basis=basis
    )
    return c.model_copy(update={"saving": capped})


def _rollup_rows(
    findings: list[RankedFinding], display: dict[str, str], max_recommendations: int
) -> tuple[list[RollupPriority | FallbackPriority], list[Recommendation]]:
    """Top Operations rows of the categories with findings: quantified ones (at most
    `max_recommendations`, also the recommendations), then the heuristic-only ones."""
    quantified = _rollups(findings, "quantified")[:max_recommendations]
    has_quantified = {f.category for f in findings if f.estimate_method == "quantified"}
    heuristic_only = [
        r for r in _rollups(findings, "heuristic") if r.category not in has_quantified
    ]
    priorities: list[RollupPriority | FallbackPriority] = []
    for roll, source in [(r, "findings_rollup") for r in quantified] + [
        (r, "findings_heuristic") for r in heuristic_only
    ]:
        priorities.append(
            RollupPriority(
                rank=len(priorities) + 1,
                category=roll.category,
                display_name=display.get(roll.category, roll.category),
                impact_score=round(roll.mid, 2),
                impact_score_low=round(roll.low, 2),
                impact_score_high=round(roll.high, 2),
                source=source,
            )
        )
    recommendations = [
        Recommendation(
            category=roll.category,
            impact_score=round(roll.mid, 2),
            impact_score_low=round(roll.low, 2),
            impact_score_high=round(roll.high, 2),
            operation_count=roll.members,
        )
        for roll in quantified
    ]
    return priorities, recommendations


def _fallback_rows(
    manifest: Manifest, findings: list[RankedFinding], display: dict[str, str], start: int
) -> list[FallbackPriority]:
    """Compute categories without findings that hold at least 5 % of the compute time."""
    gpu = manifest.gpu_utilization
    threshold = gpu.total_time_ms * gpu.computation_time_percent / 100 * FALLBACK_SHARE
    with_findings = {f.category for f in findings}
    fallback = [
        c
        for c in manifest.categories
        if c.tier != "system"
        and c.name not in with_findings
        and (c.gpu_kernel_time_ms or 0.0) >= threshold
    ]
    fallback.sort(key=lambda c: c.gpu_kernel_time_ms or 0.0, reverse=True)
    return [
        FallbackPriority(
            rank=rank,
            category=entry.name,
            display_name=display[entry.name],
            gpu_kernel_time_ms=entry.gpu_kernel_time_ms or 0.0,
        )
        for rank, entry in enumerate(fallback, start)
    ]
