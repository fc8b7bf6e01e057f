"""Level-2 sanity checks of an analysis run folder (never blocks; docs/analysis.md#validation).

``validate_run(run_dir)`` returns four checks, each ``{status: PASS|WARN, messages}``:

* ``time_check`` — Σ ``gpu_kernel_time_ms`` of the manifest's ``compute_kernel`` categories vs
  the computation time ``total_time_ms × computation_time_percent / 100``; WARN when the relative
  difference is above 2 % or the computation time is ≤ 0 (the categories hold each kernel's
  share of the computation time, docs/analysis.md#category-time).
* ``coverage_check`` — every manifest category has its findings file in its tier folder
  (``category_findings/`` or ``system_findings/``, per ``layout.findings``). Fix of the
  reference ⚠: ``cpu_idle`` is expected like any other category, since we always draft one.
* ``priority_check`` — ``priority_data.json`` invariants INV1 (findings sorted by impact_score
  desc), INV2 (``global_rank == i+1``), INV3 (``priorities[i].rank == i+1``), INV7′
  (``findings_rollup`` rows: impact_score ≈ Σ quantified findings of the category, tol 0.02),
  all four on ``tracelens_compute``; on the one impact scale, ``priorities``: INV8
  (``priorities[i].p_number == i+1``), INV9 (quantified items
  before unquantified ones, each by mid saving descending), INV10 (0 ≤ low ≤ mid ≤ high ≤ cap,
  ``percent_mid`` = mid ms / window) and INV11 (``saving_totals`` take no more from a pool
  than it holds, nor more than the window); INV12 (the layout: ``priorities`` the
  P-numbered ranking the report shows, TraceLens's lists under ``tracelens_compute``).
* ``efficiency_check`` — the check the reference only promises: every standalone
  ``operations[]`` entry of ``category_data/*_metrics.json`` whose
  ``efficiency.efficiency_percent`` is above 110, or flagged anomalous, is listed; WARN when
  such an operation feeds a quantified impact estimate (a saving from a roofline the trace
  contradicts), else the list is a note and the check passes.

Each document is read once into its lenient view (``documents.py``); one that does not read
(not found, not JSON, or of the wrong shape) is its check's WARN message, naming the file and
where it went wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ... import layout
from ..contract.contract import Tier
from ..drafting.drafts import tier_for
from ..ranking.priorities import TRACELENS_KEY
from .documents import (
    ComputeView,
    ItemView,
    ManifestView,
    MetricsView,
    OperationView,
    PriorityView,
    RankedFindingView,
    TopOperationView,
    TotalsView,
    read_view,
)

TIME_TOLERANCE_PCT = 2.0
ROUNDING_MS = 0.0005  # half the 0.001 ms the manifest rounds each category's time to
SCORE_TOLERANCE = 0.02
EFFICIENCY_LIMIT_PCT = 110.0
EPS = 1e-9  # absorbs float noise so the limits themselves pass
MANIFEST = "category_data/category_manifest.json"
PRIORITY_DATA = layout.PRIORITIES


class Check(BaseModel):
    status: Literal["PASS", "WARN"] = "PASS"
    messages: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)  # facts to know that do not fail the check


class RunValidation(BaseModel):
    time_check: Check
    coverage_check: Check
    priority_check: Check
    efficiency_check: Check

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        checks = (self.time_check, self.coverage_check, self.priority_check, self.efficiency_check)
        return all(c.status == "PASS" for c in checks)

    def summary(self) -> str:
        lines = []
        for name in ("time_check", "coverage_check", "priority_check", "efficiency_check"):
            check: Check = getattr(self, name)
            lines.append(f"{name}: {check.status}")
            lines.extend(f"  - {m}" for m in check.messages)
            lines.extend(f"  - note: {m}" for m in check.notes)
        return "\n".join(lines)


def _check(messages: list[str]) -> Check:
    return Check(status="WARN" if messages else "PASS", messages=messages)


def _time_check(manifest: ManifestView) -> Check:
    gpu = manifest.gpu_utilization
    total = gpu.total_time_ms or 0.0
    compute_pct = gpu.computation_time_percent or 0.0
    computation = total * compute_pct / 100
    compute = [c for c in manifest.categories or [] if c.tier == "compute_kernel"]
    category_sum = sum(c.gpu_kernel_time_ms or 0.0 for c in compute)
    if computation <= 0:
        return _check(
            [
                f"Computation time is {computation:.3f} ms (total_time_ms={total}, "
                f"computation_time_percent={compute_pct}): the time sanity check cannot run; "
                "check gpu_utilization in the manifest and the trace's GPU events."
            ]
        )
    diff_pct = abs(category_sum - computation) / computation * 100
    # the manifest rounds each category's time to 0.001 ms: a difference within that rounding
    # is no difference (a window of a few µs would otherwise fail on it)
    rounding = ROUNDING_MS * len(compute)
    within_rounding = abs(category_sum - computation) <= rounding + EPS
    if diff_pct > TIME_TOLERANCE_PCT + EPS and not within_rounding:
        return _check(
            [
                f"Category sum ({category_sum:.3f} ms) vs Computation time ({computation:.3f} ms)"
                f" = {diff_pct:.2f}% difference (limit {TIME_TOLERANCE_PCT:g}%): some kernels are "
                "missing from or double-counted in the compute categories; check the "
                "categorisation before trusting per-category shares."
            ]
        )
    return Check()


def _coverage_check(run_dir: Path, manifest: ManifestView) -> Check:
    missing: dict[str, list[str]] = {"system": [], "compute": []}
    for entry in manifest.categories or []:
        name = entry.name
        if not isinstance(name, str) or not name:
            continue
        if not (run_dir / layout.findings(name)).is_file():
            missing["compute" if tier_for(name) == Tier.COMPUTE else "system"].append(name)
    messages = []
    for tier, folder in (("system", "system_findings"), ("compute", "category_findings")):
        if missing[tier]:
            messages.append(
                f"Missing {tier} findings: {', '.join(missing[tier])} — expected "
                f"{folder}/<name>_findings.md; run the drafts step (or the sub-agent) for them."
            )
    return _check(messages)


def _priority_check(run_dir: Path) -> Check:
    data, problem = read_view(run_dir / PRIORITY_DATA, PriorityView)
    if problem == "not found":
        return _check([f"{PRIORITY_DATA} not found: run the priorities step first."])
    if data is None:
        return _check([f"{PRIORITY_DATA} {problem}: regenerate it with the priorities step."])
    messages = _layout_messages(data)
    compute = data.tracelens_compute or ComputeView()
    messages += _compute_messages(compute.findings or [], compute.priorities or [])
    window = data.baseline_ms or 0.0
    messages += _item_messages(data.priorities or [], window)
    if data.saving_totals is not None:
        messages += _totals_messages(data.saving_totals, window)
    return _check(messages)


def _compute_messages(
    findings: list[RankedFindingView], priorities: list[TopOperationView]
) -> list[str]:
    """INV1, INV2, INV3 and INV7' on TraceLens's compute-only lists."""
    messages = []
    scores = [f.impact_score or 0.0 for f in findings]
    for i in range(1, len(scores)):
        if scores[i] > scores[i - 1]:
            messages.append(
                f"INV1: findings[{i}].impact_score={scores[i]} > "
                f"findings[{i - 1}].impact_score={scores[i - 1]}: findings must be sorted "
                "by impact_score descending; regenerate priority_data.json."
            )
    for i, finding in enumerate(findings):
        if finding.global_rank != i + 1:
            messages.append(
                f"INV2: findings[{i}].global_rank={finding.global_rank} != {i + 1}: "
                "global ranks must follow list order; regenerate priority_data.json."
            )
    for i, row in enumerate(priorities):
        if row.rank != i + 1:
            messages.append(
                f"INV3: {TRACELENS_KEY}.priorities[{i}].rank={row.rank} != {i + 1}: "
                "Top Operations ranks must follow list order; regenerate priority_data.json."
            )
    for row in priorities:
        if row.source != "findings_rollup":
            continue
        expected = sum(
            f.impact_score or 0.0
            for f in findings
            if f.category == row.category and f.estimate_method != "heuristic"
        )
        if row.impact_score is None or abs(row.impact_score - expected) > SCORE_TOLERANCE + EPS:
            messages.append(
                f"INV7': {TRACELENS_KEY}.priorities[category={row.category}].impact_score="
                f"{row.impact_score}"
                f" != sum(findings[].impact_score)={expected:.2f} (tol {SCORE_TOLERANCE}): "
                "the rollup and its findings disagree; regenerate priority_data.json."
            )
    return messages


def _layout_messages(data: PriorityView) -> list[str]:
    """INV12: `priorities` is the ranking the report shows (P-numbered items), TraceLens's
    compute-only lists sit under `tracelens_compute`, and nothing else holds either."""
    if data.earlier:
        return [f"INV12: {PRIORITY_DATA} is in the earlier layout (the ranking under 'items', "
                "TraceLens's compute-only lists at the top): a reader of 'priorities' gets a "
                f"compute-only rank, not the report's P1; regenerate {PRIORITY_DATA}."]  # fmt: skip
    if data.priorities is None or data.tracelens_compute is None:
        return [f"INV12: {PRIORITY_DATA} needs a 'priorities' list (the report's ranking) and a "
                f"'{TRACELENS_KEY}' object (TraceLens's lists); regenerate it."]  # fmt: skip
    unnumbered = [i for i, p in enumerate(data.priorities) if "p_number" not in p.model_fields_set]
    if unnumbered:
        return [f"INV12: priorities[{unnumbered[0]}] has no p_number: 'priorities' holds the "
                f"report's P-numbered items; regenerate {PRIORITY_DATA}."]  # fmt: skip
    return []


def _rank_key(item: ItemView) -> tuple[bool, float]:
    """What the items are ordered by: quantified first, then mid saving descending."""
    return (item.saving is None, -((item.saving and item.saving.mid_ms) or 0.0))


def _item_messages(items: list[ItemView], window: float) -> list[str]:
    """INV8 (p_number = i+1), INV9 (rank order), INV10 (each saving within its cap and its
    % of the window consistent with its ms)."""
    messages = []
    for i, item in enumerate(items):
        if item.p_number != i + 1:
            messages.append(
                f"INV8: priorities[{i}].p_number={item.p_number} != {i + 1}: P-numbers "
                "must follow list order; regenerate priority_data.json."
            )
        if i and _rank_key(items[i - 1]) > _rank_key(item):
            messages.append(
                f"INV9: priorities[{i}] ranks above priorities[{i - 1}] (quantified before "
                "unquantified, then mid saving descending); regenerate priority_data.json."
            )
        messages += _saving_messages(i, item, window)
    return messages


def _saving_messages(i: int, item: ItemView, window: float) -> list[str]:
    """INV10 for items[i]: 0 <= low <= mid <= high <= cap, and percent_mid = mid / window; an
    unquantified item has no saving and says why."""
    if item.estimate_method == "unquantified":
        if item.saving is None and item.unquantified_reason:
            return []
        return [f"INV10: priorities[{i}] is unquantified: it needs saving null and an "
                "unquantified_reason; regenerate priority_data.json."]  # fmt: skip
    saving = item.saving
    values = [saving.low_ms, saving.mid_ms, saving.high_ms, saving.cap_ms] if saving else [None]
    if any(v is None for v in values):
        return [f"INV10: priorities[{i}].saving lacks low_ms, mid_ms, high_ms or cap_ms; "
                "regenerate priority_data.json."]  # fmt: skip
    low, mid, high, cap = (float(v or 0.0) for v in values)
    if not 0 <= low <= mid <= high <= cap + EPS:
        return [f"INV10: priorities[{i}] saving low={low} mid={mid} high={high} cap={cap} ms: "
                "needs 0 <= low <= mid <= high <= cap; regenerate priority_data.json."]  # fmt: skip
    percent = item.percent_mid
    if window > 0 and (percent is None or abs(percent - mid / window * 100) > SCORE_TOLERANCE):
        return [f"INV10: priorities[{i}].percent_mid={item.percent_mid} is not {mid} "
                f"ms of the {window} ms window; regenerate priority_data.json."]  # fmt: skip
    return []


def _totals_messages(totals: TotalsView, window: float) -> list[str]:
    """INV11: no pool gives out more than it holds, and the total fits in the window."""
    messages = []
    pools = totals.pool_ms or {}
    for pool, taken in (totals.by_pool_mid_ms or {}).items():
        held = pools.get(pool)  # a pool the totals name but do not hold is not checked
        if held is not None and (taken or 0.0) > held + SCORE_TOLERANCE:
            messages.append(
                f"INV11: saving_totals take {taken} ms from the {pool} pool, which holds "
                f"{held} ms; regenerate priority_data.json."
            )
    mid = totals.mid_ms or 0.0
    if mid > window + SCORE_TOLERANCE:
        messages.append(
            f"INV11: saving_totals.mid_ms={mid} exceeds the {window} ms window; regenerate "
            "priority_data.json."
        )
    return messages


def _efficiency_check(run_dir: Path) -> Check:
    messages, notes = [], []
    for path in sorted((run_dir / "category_data").glob("*_metrics.json")):
        metrics, _ = read_view(path, MetricsView)
        if metrics is None:
            continue  # the priorities step reports unreadable metrics (failed_categories)
        if metrics.comparison_scope != "standalone":
            continue
        category = metrics.category or path.name.removesuffix("_metrics.json")
        quantified = _quantified_rows(metrics)
        for op in metrics.operations or []:
            anomaly = _anomaly(category, op)
            if anomaly is None:
                continue
            if (op.name, op.time_ms) in quantified:
                messages.append(
                    f"{anomaly} Yet it feeds a quantified estimate; re-run the analysis."
                )
            else:
                notes.append(anomaly)
    check = _check(messages)
    return check.model_copy(update={"notes": notes})


def _quantified_rows(metrics: MetricsView) -> set[tuple[object, float | None]]:
    """(operation, time_ms) of the metrics' quantified impact estimates."""
    return {
        (e.operation, e.time_ms)
        for e in metrics.impact_estimates or []
        if e.estimate_method == "quantified"
    }


def _anomaly(category: object, op: OperationView) -> str | None:
    """What is wrong with an operation's efficiency, or None when it is within the roof."""
    efficiency = op.efficiency
    eff = efficiency.efficiency_percent
    where = f"Efficiency anomaly: category={category} operation={op.name}"
    if eff is not None and eff > EFFICIENCY_LIMIT_PCT + EPS:
        return (
            f"{where} efficiency={eff:g}% (> {EFFICIENCY_LIMIT_PCT:g}%): the roofline model or "
            "peak for this op is likely wrong; do not treat it as a tuning target."
        )
    if efficiency.is_anomaly is True:
        why = efficiency.warning or "some instances exceed the roofline"
        return f"{where} efficiency={eff}% on average; {why}. Do not treat it as a tuning target."
    return None


def validate_run(run_dir: Path) -> RunValidation:
    """Run the four consistency checks on the analysis output folder ``run_dir``."""
    run_dir = Path(run_dir)
    manifest, problem = read_view(run_dir / MANIFEST, ManifestView)
    if manifest is None:
        bad = Check(
            status="WARN",
            messages=[f"{MANIFEST} {problem}: run the prepare step before validating."],
        )
        time_check, coverage_check = bad, bad.model_copy(deep=True)
    else:
        time_check = _time_check(manifest)
        coverage_check = _coverage_check(run_dir, manifest)
    return RunValidation(
        time_check=time_check,
        coverage_check=coverage_check,
        priority_check=_priority_check(run_dir),
        efficiency_check=_efficiency_check(run_dir),
    )
