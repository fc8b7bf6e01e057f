"""Compose ``analysis.md`` (deterministic, no LLM; docs/analysis.md#the-report).

``compose_report(inputs)`` takes the manifest, the priorities, the findings, the model
identification, the platform peaks of the category metadata and whether a plot was drawn,
and returns the report text in this order: title, Executive Summary, optional Warnings,
Compute Kernel Optimizations, Kernel Fusion Opportunities (Experimental), System-Level
Optimizations, Detailed Analysis, Appendix.

Choices:

* Compute cards follow ``priority_data.findings`` order; each one copies the sub-agent card and
  Detailed Analysis block matched by ``(category, category_rank)``. When the findings file has no
  such card (missing file, ERROR status) a short card is built from the finding's numbers, so
  the report always has one card per finding. Marker numbers come from ``priority_data.json``.
* The plot is linked, not inlined: ``![Performance breakdown](perf_improvement.png)`` next to
  ``analysis.md``. Without a PNG the Executive Summary says so in a sentence (no placeholder).
* Only the standalone layout is composed (comparative runs get the same sections).
* System cards: cpu_idle first, then multi_kernel, renumbered, icons by position.

"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rooflens.analyzers import layout
from rooflens.analyzers.categories.documents import Metrics
from rooflens.analyzers.categories.models import CategoryMetrics
from rooflens.analyzers.findings.contract import (
    DetailBlock,
    Findings,
    Marker,
    PItem,
    Section,
    Status,
)
from rooflens.analyzers.findings.drafts import FUSION_KEY, SYSTEM_KEYS, estimate_section, num
from rooflens.analyzers.findings.model_info import ModelIdentification
from rooflens.analyzers.findings.priorities import PriorityData, RankedFinding
from rooflens.analyzers.findings.report_prose import ReportProse
from rooflens.analyzers.prepare.categories import GpuUtilization
from rooflens.analyzers.prepare.manifest import CategoryEntry, CategoryMetadata, Manifest

REPORT_NAME = layout.REPORT
UNKNOWN = "Cannot be inferred from trace"
POSITION_ICONS = ("🔴", "🟡")
LOW_ICON = "🟢"
SECTIONS = (
    "Executive Summary",
    "Compute Kernel Optimizations",
    "Kernel Fusion Opportunities (Experimental)",
    "System-Level Optimizations",
    "Detailed Analysis",
    "Appendix",
)
INSIGHTS = {
    "compute": "Compute Kernel Insights",
    "fusion": "Kernel Fusion Insights",
    "system": "System-Level Insights",
}
LINK_LABEL = {
    "compute": "Compute kernel insights",
    "fusion": "Kernel fusion insights",
    "system": "System-level insights",
}
NO_COMPUTE = (
    "✅ No compute kernel optimization opportunities identified. "
    "All categories are within target performance bounds."
)
NO_FUSION = "No kernel fusion opportunities detected."
FUSION_NOTE = (
    "> **Experimental.** Savings assume a fused kernel hides about 85 % of the time of the "
    "kernels it replaces. Kernels without a performance model at trace time lower the "
    "confidence, and a candidate is only kept when at least 75 % of its kernels are modelled."
)
SYSTEM_NOTE = (
    "> System-level findings are exploratory: the trace shows symptoms (idle gaps, exposed "
    "communication) but not always their cause."
)


def _pct(value: Any) -> str:
    return "—" if value is None else f"{float(value):.2f}%"


def position_icon(n: int) -> str:
    """Compute/system icon of the n-th (1-based) card: P1 red, P2 yellow, P3+ green."""
    return POSITION_ICONS[n - 1] if 0 < n <= len(POSITION_ICONS) else LOW_ICON


def anchor(tier: str, n: int) -> str:
    return f"detailed-analysis-{tier}-p{n}"


def link(tier: str, n: int) -> str:
    return f"→ *See [Detailed Analysis: {LINK_LABEL[tier]} > P{n}](#{anchor(tier, n)}) for details*"


@dataclass(frozen=True)
class ReportInputs:
    """Everything the report is composed from, as the pipeline holds it."""

    manifest: Manifest
    metadata: Mapping[str, CategoryMetadata]
    metrics: Mapping[str, Metrics]
    findings: Mapping[str, Findings]
    priorities: PriorityData
    identity: ModelIdentification | None
    has_plot: bool
    prose: ReportProse | None = None


class _Run:
    """The report's view of its inputs: the typed manifest, priorities and identity."""

    def __init__(self, inputs: ReportInputs) -> None:
        self.inputs = inputs
        self.manifest: Manifest = inputs.manifest
        self.priority: PriorityData = inputs.priorities
        self.model: ModelIdentification | None = inputs.identity
        self.util: GpuUtilization = inputs.manifest.gpu_utilization
        self.categories: list[CategoryEntry] = list(inputs.manifest.categories)
        self.by_name = {c.name: c for c in self.categories}

    def compute_ms(self) -> float:
        return self.util.total_time_ms * self.util.computation_time_percent / 100

    def findings_of(self, key: str) -> Findings | None:
        return self.inputs.findings.get(key)

    def metrics_in_file_order(self) -> list[tuple[str, Metrics]]:
        """(key, metrics) of every analysed category, in their files' name order."""
        keys = sorted(self.inputs.metrics, key=lambda k: f"{k}_metrics.json")
        return [(k, self.inputs.metrics[k]) for k in keys]

    def compute_categories(self) -> list[CategoryEntry]:
        return [c for c in self.categories if c.tier != "system"]

    def peaks(self) -> CategoryMetadata | None:
        for key in sorted(self.inputs.metadata, key=lambda k: f"{k}_metadata.json"):
            meta = self.inputs.metadata[key]
            if meta.max_achievable_tflops:
                return meta
        return None


def _title(run: _Run) -> str:
    model = run.model.model if run.model else UNKNOWN
    model = "Unidentified model" if model in (UNKNOWN, "") else model
    return f"# {model} - {run.manifest.platform or 'Unknown platform'} Standalone Analysis"


def _top_category(run: _Run) -> tuple[str, str]:
    cats = [c for c in run.compute_categories() if c.gpu_kernel_time_ms is not None]
    if not cats:
        return "—", "—"
    top = max(cats, key=lambda c: c.gpu_kernel_time_ms or 0.0)
    ms = top.gpu_kernel_time_ms or 0.0
    share = ms / run.compute_ms() * 100 if run.compute_ms() else 0
    return top.display_name or top.name, f"{share:.1f}%"


def executive_summary(
    run: _Run, counts: tuple[int, int, int], prose: ReportProse | None = None
) -> str:
    u = run.util
    top, share = _top_category(run)
    rows = [
        ("Total Time", f"{u.total_time_ms:.2f} ms"),
        ("Compute %", _pct(u.computation_time_percent)),
        ("Idle %", _pct(u.idle_time_percent)),
        ("Exposed Communication %", _pct(u.exposed_comm_time_percent)),
        ("Top Bottleneck Category", f"{top} ({share})"),
    ]
    table = "\n".join(["| Metric | Value |", "| --- | --- |", *(f"| {a} | {b} |" for a, b in rows)])
    ncomp, nfus, nsys = counts
    para = (
        f"The profiled step takes {rows[0][1]} of GPU time. Compute kernels are busy "
        f"{rows[1][1]} of it and the GPU is idle {rows[2][1]}. The largest compute category "
        f"is {top}. This report lists {ncomp} compute kernel finding(s), {nfus} kernel fusion "
        f"candidate(s) and {nsys} system-level finding(s)."
    )
    if prose is not None and prose.summary:
        para = prose.summary
    if run.inputs.has_plot:
        plot = f"![Performance breakdown]({layout.PLOT})"
    else:
        plot = "_No performance breakdown plot was produced for this run._"
    parts = ["## Executive Summary", para, table, plot]
    if prose is not None and prose.recommendation:
        parts.append(f"**Recommendation**: {prose.recommendation}")
    return "\n\n".join(parts)


def warnings(run: _Run) -> str | None:
    failed: list[tuple[str, str, str]] = []
    for item in run.priority.failed_categories:
        if item.status == "ERROR":
            cat = item.category
            failed.append((cat, _tier_name(cat), item.message or "analysis failed"))
    seen = {f[0] for f in failed}
    keys = [c.name for c in run.categories if c.name]
    for key in [*keys, FUSION_KEY]:
        found = run.findings_of(key)
        if key not in seen and found is not None and found.status == Status.ERROR:
            msg = next((ln for ln in found.preamble.splitlines() if ln.startswith("Error")), "")
            failed.append((key, _tier_name(key), msg.replace("|", "\\|") or "analysis failed"))
            seen.add(key)
    variance: list[tuple[str, str, str, str]] = []
    for key, metrics in run.metrics_in_file_order():
        if not isinstance(metrics, CategoryMetrics):
            continue
        for op in metrics.operations or ():
            if op.get("high_variance") is True:
                cat = metrics.category or key
                variance.append((op.name, cat, num(op.get("cov")), num(op.time_ms)))
    if not failed and not variance:
        return None
    out = ["## Warnings"]
    if failed:
        out.append("Some analyses failed, so their findings are missing from this report.")
        rows = [f"| {a} | {t} | {e} |" for a, t, e in failed]
        out.append("\n".join(["| Analysis | Tier | Error Summary |", "| --- | --- | --- |", *rows]))
    if variance:
        out.append("These ops vary a lot between calls, so their averaged numbers are less sure.")
        rows = [f"| {o} | {c} | {v} | {t} |" for o, c, v, t in variance]
        head = "| Operation | Category | CoV | Reported Time (ms) |\n| --- | --- | --- | --- |"
        out.append("\n".join([head, *rows]))
    return "\n\n".join(out)


def _tier_name(key: str) -> str:
    return "fusion" if key == FUSION_KEY else "system" if key in SYSTEM_KEYS else "compute"


def top_operations(run: _Run) -> str:
    rows = []
    compute = run.compute_ms()
    for p in run.priority.priorities:
        cat = run.by_name.get(p.category)
        ms = cat.gpu_kernel_time_ms if cat else getattr(p, "gpu_kernel_time_ms", None)
        share = "—" if ms is None or not compute else f"{float(ms) / compute * 100:.1f}%"
        low = getattr(p, "impact_score_low", None)
        high = getattr(p, "impact_score_high", None)
        tail = f"<!-- top-ops-row low={'null' if low is None else low} "
        tail += f"high={'null' if high is None else high} -->"
        cells = (p.rank, p.display_name, num(ms), share, num(cat.ops_count if cat else None))
        rows.append("| " + " | ".join(str(c) for c in cells) + f" | {tail}")
    head = (
        "| Rank | Category | Time (ms) | % of Compute Time | Ops |\n| --- | --- | --- | --- | --- |"
    )
    body = "\n".join([head, *rows])
    return f"### Top Operations\n\n<!-- impact-begin kind=top_ops -->\n{body}\n<!-- impact-end -->"


def _fallback_pair(f: RankedFinding) -> tuple[PItem, DetailBlock]:
    cat, bound = f.category, f.finding.bound_type
    title = f"{bound.capitalize()}-bound {cat} ops ({f.finding.eff_bucket} % bucket)"
    names = ", ".join(sorted({m.operation for m in f.finding.members}))
    insight = f"{names or cat} leave(s) an estimated impact_score of {num(f.impact_score)}."
    action = "Re-run the category analysis to get the full card for this finding."
    card = PItem(0, title, None, fields=(("Insight", insight), ("Action", action)))
    ident = (
        f"The {cat} findings file has no card for this finding, so only the ranked numbers are "
        f"shown (source: `priority_data.json` → `findings[category={cat}]`)."
    )
    sections = (Section("Identification", ident), estimate_section(f.finding.document()))
    return card, DetailBlock("compute", 0, title, sections=sections)


def _compute_pair(run: _Run, f: RankedFinding) -> tuple[PItem, DetailBlock]:
    found = run.findings_of(f.category)
    rank = f.category_rank
    card = next((c for c in (found.cards if found else ()) if c.number == rank), None)
    block = next((b for b in (found.details if found else ()) if b.rank == rank), None)
    if card is None or block is None:
        return _fallback_pair(f)
    return card, block


def _p_marker(f: RankedFinding) -> Marker:
    scores = (f.finding.impact_score_low, f.impact_score, f.finding.impact_score_high)
    attrs = [("category", f.category)]
    attrs += [(k, str(v)) for k, v in zip(("low", "mid", "high"), scores, strict=True)]
    return Marker("p_item", tuple(attrs))


def _card_text(card: PItem, n: int, icon: str | None, tier: str, marker: Marker) -> str:
    lib = card.suffix if tier != "system" and card.suffix not in (None, "Unknown") else None
    text = card.impact_text
    if text is None:
        text = "Not quantifiable from trace data" if tier == "system" else "impact_score: —"
    renumbered = PItem(n, card.title, lib, icon, card.fields, marker, text, card.trailer)
    return f"{renumbered.render()}\n\n{link(tier, n)}\n\n---"


def _detail_text(block: DetailBlock, n: int, tier: str, heading: str) -> str:
    renumbered = DetailBlock(tier, n, heading, block.lead, block.sections)
    return f'<a id="{anchor(tier, n)}"></a>\n\n{renumbered.render()}'


def _system_cards(run: _Run) -> list[tuple[PItem, DetailBlock]]:
    pairs = []
    for key in SYSTEM_KEYS:
        found = run.findings_of(key)
        if found is None or found.status == Status.ERROR:
            continue
        pairs += _pairs(found)
    return pairs


def _pairs(found: Findings) -> list[tuple[PItem, DetailBlock]]:
    """Cards with their Detailed Analysis block (card number == block rank)."""
    blocks = {b.rank: b for b in found.details}
    return [(c, blocks[c.number]) for c in found.cards if c.number in blocks]


def _system_clear(run: _Run) -> str:
    u = run.util
    return (
        f"✅ No system-level bottlenecks detected. GPU activity breakdown shows "
        f"{_pct(u.computation_time_percent)} computation, "
        f"{_pct(u.idle_time_percent)} idle, "
        f"{_pct(u.exposed_comm_time_percent)} exposed communication and "
        f"{_pct(u.exposed_memcpy_time_percent)} exposed memory copies."
    )


def compose_report(inputs: ReportInputs) -> str:
    """The complete ``analysis.md`` text (see the module docstring); the model's prose, when
    given, replaces the summary paragraph code writes."""
    run = _Run(inputs)
    prose = inputs.prose
    compute = [(f, *_compute_pair(run, f)) for f in run.priority.findings]
    fusion_file = run.findings_of(FUSION_KEY)
    fusion_ok = fusion_file is not None and fusion_file.status != Status.ERROR
    fusion = _pairs(fusion_file) if fusion_ok else []
    system = _system_cards(run)

    comp_cards, comp_details = [], []
    for n, (f, card, block) in enumerate(compute, 1):
        icon = position_icon(n)
        comp_cards.append(_card_text(card, n, icon, "compute", _p_marker(f)))
        heading = f"{icon} P{n}: {block.title or card.title}"
        comp_details.append(_detail_text(block, n, "compute", heading))
    fus_cards, fus_details = [], []
    for n, (card, block) in enumerate(fusion, 1):
        marker = card.impact or Marker("p_item", (("low", "—"), ("mid", "—"), ("high", "—")))
        fus_cards.append(_card_text(card, n, card.icon, "fusion", marker))
        heading = f"{card.icon or LOW_ICON} P{n}: {card.title}" + (
            f" ({card.suffix})" if card.suffix else ""
        )
        fus_details.append(_detail_text(block, n, "fusion", heading))
    sys_cards, sys_details = [], []
    null = Marker("p_item", (("low", "null"), ("mid", "null"), ("high", "null")))
    for n, (card, block) in enumerate(system, 1):
        icon = position_icon(n)
        sys_cards.append(_card_text(card, n, icon, "system", null))
        sys_details.append(_detail_text(block, n, "system", f"{icon} P{n}: {card.title}"))

    counts = (len(compute), len(fusion), len(system))
    parts = [_title(run), executive_summary(run, counts, prose)]
    warn = warnings(run)
    if warn:
        parts.append(warn)
    parts += ["## Compute Kernel Optimizations", top_operations(run), *(comp_cards or [NO_COMPUTE])]
    parts += ["## Kernel Fusion Opportunities (Experimental)", FUSION_NOTE]
    parts += fus_cards or [NO_FUSION]
    parts += ["## System-Level Optimizations", SYSTEM_NOTE, *(sys_cards or [_system_clear(run)])]
    parts.append("## Detailed Analysis")
    for tier, blocks in (
        ("compute", comp_details),
        ("fusion", fus_details),
        ("system", sys_details),
    ):
        parts.append(f"### {INSIGHTS[tier]}")
        parts += blocks or ["No items in this tier."]
    parts.append(appendix(run))
    return "\n\n".join(parts) + "\n"


def appendix(run: _Run) -> str:
    m = run.model or ModelIdentification()
    keys = ("model", "architecture", "scale", "precision")
    model_rows = [(k.capitalize(), getattr(m, k) or UNKNOWN) for k in keys]
    peaks = run.peaks()
    tflops = peaks.max_achievable_tflops if peaks else {}
    bw = peaks.peak_hbm_bw_tbs if peaks else None
    hw_rows = [
        ("Platform", run.manifest.platform or (peaks.platform if peaks else None) or UNKNOWN),
        ("Peak HBM BW", "—" if bw is None else f"{bw} TB/s"),
        ("Peak MAF (BF16)", f"{num(tflops.get('matrix_bf16'))} TFLOPS"),
    ]
    for key, label in (("matrix_fp8", "FP8"), ("matrix_fp4", "FP4")):
        if tflops.get(key) is not None:
            hw_rows.append((f"Peak MAF ({label})", f"{tflops[key]} TFLOPS"))

    def table(rows: list[tuple[str, Any]]) -> str:
        return "\n".join(
            ["| Field | Value |", "| --- | --- |", *(f"| {a} | {b} |" for a, b in rows)]
        )

    return "\n\n".join(
        [
            "## Appendix",
            "### Model Architecture",
            table(model_rows),
            "### Hardware Reference",
            table(hw_rows),
        ]
    )
