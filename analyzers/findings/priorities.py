"""`<run_dir>/priority_data.json`: rank every category finding and build the Top Operations rows.

Inputs are `category_data/*_metrics.json` (read in filename order) and
`category_data/category_manifest.json`. The document follows the reference layout
(`baseline_ms`, `priorities`, `recommendations`, `findings`, `all_estimates`) with three fixes:

* `recommendations[].operation_count` is the sum of `member_count` over the quantified findings
  rolled up into that row (the reference summed a key findings never carry, so it was always 0).
* A category whose findings are all heuristic still gets a Top Operations row. Choice: such
  categories get `source: "findings_heuristic"` rows whose `impact_score` / `_low` / `_high` are
  the sums of their heuristic findings' values (2 dp), sorted by that mid value descending. They
  are listed after the quantified `findings_rollup` rows and before the `manifest_fallback` rows,
  are not limited by `max_recommendations` (that cap applies to quantified rollups only) and are
  not added to `recommendations[]`, which stays a list of quantified savings for the plots.
* Failures are reported, never swallowed. A metrics file whose status is `ERROR` / `NO_DATA`, or
  that cannot be read or does not have the expected shape, is skipped and listed in
  `failed_categories[]` as `{category, status, message}` (status `UNREADABLE` or `INVALID` for
  the last two). Run-level problems (missing manifest or `category_data` folder) raise instead of
  producing an all-empty document.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_serializer

from rooflens.analyzers.report.write_csv import atomic_write_bytes

FALLBACK_SHARE = 0.05
SKIPPED_STATUSES = ("ERROR", "NO_DATA")


class Finding(BaseModel):
    """One `category_findings[]` entry plus its category and ranks (`rank` → `category_rank`)."""

    model_config = ConfigDict(extra="forbid")

    bound_type: str | None
    library: str | None
    eff_bucket: str | None
    estimate_method: Literal["quantified", "heuristic"]
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    percent_of_total: float | None = None
    member_count: int
    members: list[dict[str, Any]]
    category: str
    category_rank: int
    global_rank: int = 0

    @model_serializer(mode="wrap")
    def _drop_absent_percent(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        if self.percent_of_total is None:
            data.pop("percent_of_total", None)
        return data


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


class PriorityData(BaseModel):
    baseline_ms: float
    priorities: list[RollupPriority | FallbackPriority]
    recommendations: list[Recommendation]
    findings: list[Finding]
    all_estimates: list[dict[str, Any]]
    failed_categories: list[FailedCategory]


@dataclass
class _Rollup:
    category: str
    mid: float = 0.0
    low: float = 0.0
    high: float = 0.0
    members: int = 0


def _category_of(path: Path, metrics: dict[str, Any]) -> str:
    name = metrics.get("category")
    if isinstance(name, str) and name:
        return name
    return path.name.removesuffix("_metrics.json")


def _read_metrics(
    path: Path,
) -> tuple[str, list[dict[str, Any]], list[Finding]] | FailedCategory:
    """(category, estimates, findings without global rank) or the reason the file is unusable."""
    fallback_name = path.name.removesuffix("_metrics.json")
    try:
        metrics = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return FailedCategory(category=fallback_name, status="UNREADABLE", message=str(exc))
    if not isinstance(metrics, dict):
        message = f"expected a JSON object, got {type(metrics).__name__}"
        return FailedCategory(category=fallback_name, status="INVALID", message=message)
    category = _category_of(path, metrics)
    status = metrics.get("status")
    if status in SKIPPED_STATUSES:
        message = metrics.get("error") or metrics.get("message") or f"metrics status is {status}"
        return FailedCategory(category=category, status=status, message=str(message))
    estimates = metrics.get("impact_estimates") or []
    raw_findings = metrics.get("category_findings") or []
    try:
        if not isinstance(estimates, list) or not all(isinstance(e, dict) for e in estimates):
            raise ValueError("impact_estimates is not a list of objects")
        if not isinstance(raw_findings, list) or not all(isinstance(f, dict) for f in raw_findings):
            raise ValueError("category_findings is not a list of objects")
        findings = []
        for raw in raw_findings:
            fields = {k: v for k, v in raw.items() if k != "rank"}
            findings.append(Finding(**fields, category=category, category_rank=raw.get("rank")))
    except (ValueError, TypeError, ValidationError) as exc:
        return FailedCategory(category=category, status="INVALID", message=str(exc))
    return category, list(estimates), findings


def _rollups(findings: list[Finding], method: str) -> list[_Rollup]:
    """Per-category sums of `method` findings, ordered by summed mid desc (stable on first seen)."""
    by_category: dict[str, _Rollup] = {}
    for finding in findings:
        if finding.estimate_method != method:
            continue
        roll = by_category.setdefault(finding.category, _Rollup(category=finding.category))
        roll.mid += finding.impact_score
        roll.low += finding.impact_score_low
        roll.high += finding.impact_score_high
        roll.members += finding.member_count
    return sorted(by_category.values(), key=lambda r: r.mid, reverse=True)


def generate_priority_data(run_dir: Path, max_recommendations: int = 6) -> PriorityData:
    """Build the priority document for `run_dir` (the analysis output folder)."""
    category_dir = Path(run_dir) / "category_data"
    manifest = json.loads((category_dir / "category_manifest.json").read_text(encoding="utf-8"))
    gpu = manifest.get("gpu_utilization") or {}
    baseline_ms = float(gpu.get("total_time_ms") or 0.0)
    manifest_categories = manifest.get("categories") or []
    display = {c["name"]: c.get("display_name") or c["name"] for c in manifest_categories}

    all_estimates: list[dict[str, Any]] = []
    findings: list[Finding] = []
    failed: list[FailedCategory] = []
    for path in sorted(category_dir.glob("*_metrics.json"), key=lambda p: p.name):
        result = _read_metrics(path)
        if isinstance(result, FailedCategory):
            failed.append(result)
            continue
        _, estimates, category_findings = result
        all_estimates.extend(estimates)
        findings.extend(category_findings)

    findings = sorted(findings, key=lambda f: f.impact_score, reverse=True)
    for index, finding in enumerate(findings, start=1):
        finding.global_rank = index

    quantified = _rollups(findings, "quantified")[:max_recommendations]
    quantified_names = {r.category for r in quantified}
    has_quantified = {f.category for f in findings if f.estimate_method == "quantified"}
    heuristic_only = [
        r for r in _rollups(findings, "heuristic") if r.category not in has_quantified
    ]

    priorities: list[RollupPriority | FallbackPriority] = []
    recommendations: list[Recommendation] = []
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
        if roll.category in quantified_names:
            recommendations.append(
                Recommendation(
                    category=roll.category,
                    impact_score=round(roll.mid, 2),
                    impact_score_low=round(roll.low, 2),
                    impact_score_high=round(roll.high, 2),
                    operation_count=roll.members,
                )
            )

    threshold = baseline_ms * float(gpu.get("computation_time_percent") or 0.0) / 100
    threshold *= FALLBACK_SHARE
    with_findings = {f.category for f in findings}
    fallback = [
        c
        for c in manifest_categories
        if c.get("tier") != "system"
        and c["name"] not in with_findings
        and float(c.get("gpu_kernel_time_ms") or 0.0) >= threshold
    ]
    fallback.sort(key=lambda c: float(c.get("gpu_kernel_time_ms") or 0.0), reverse=True)
    for entry in fallback:
        priorities.append(
            FallbackPriority(
                rank=len(priorities) + 1,
                category=entry["name"],
                display_name=display[entry["name"]],
                gpu_kernel_time_ms=float(entry.get("gpu_kernel_time_ms") or 0.0),
            )
        )

    return PriorityData(
        baseline_ms=baseline_ms,
        priorities=priorities,
        recommendations=recommendations,
        findings=findings,
        all_estimates=all_estimates,
        failed_categories=failed,
    )


def write_priority_data(run_dir: Path, data: PriorityData) -> Path:
    """Write `data` atomically to `<run_dir>/priority_data.json`; returns the path."""
    path = Path(run_dir) / "priority_data.json"
    text = json.dumps(data.model_dump(mode="json"), indent=2) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))
    return path
