"""Compose ``analysis.md`` (deterministic, no LLM; docs/analysis.md#the-report).

``compose_report(inputs)`` takes the manifest, the priorities, the findings, the model
identification, the platform and whether a plot was drawn, and returns the report text in
this order: title, Executive Summary, Priorities, What fixing each would buy (when the
priorities were replayed), What this analysis could and could not see, optional Warnings,
Compute Kernel Optimizations, Kernel Fusion Opportunities (Experimental), System-Level
Optimizations, Detailed Analysis, Appendix.

Choices:

* Every finding is ranked once, on one scale: ``priority_data.priorities`` gives each its
  P-number, and cards keep their section but carry that number (cards.py).
* The plot is linked, not inlined: ``![Performance breakdown](perf_improvement.png)`` next to
  ``analysis.md``. Without a PNG the Executive Summary says so in a sentence (no placeholder).
* A comparative run (``inputs.comparison``) gets the comparative title, the trace 1 / trace 2
  / difference columns in the Executive Summary and Top Operations tables, and a "What
  changed" section after the Priorities (comparative.py).
"""

from __future__ import annotations

from ... import layout
from ...markdown_text import md_code
from ..contract.contract import DetailBlock, PItem
from ..drafting.system_compare import system_markdown
from . import judgement
from .appendix import appendix
from .cards import (
    Placed,
    estimate_section,
    impact_text,
    item_marker,
    null_marker,
    placed_cards,
)
from .comparative import title as comparative_title
from .coverage import HEADING as COVERAGE_HEADING
from .coverage import what_we_saw
from .replay_table import HEADING as REPLAY_HEADING
from .replay_table import what_fixing_buys
from .summary import (
    ReportInputs,
    executive_summary,
    pct,
    priorities_table,
    top_operations,
    warnings,
)

REPORT_NAME = layout.REPORT
POSITION_ICONS = ("🔴", "🟡")
LOW_ICON = "🟢"
SECTIONS = (
    "Executive Summary",
    "Priorities",
    COVERAGE_HEADING,
    "Compute Kernel Optimizations",
    "Kernel Fusion Opportunities (Experimental)",
    "System-Level Optimizations",
    "Detailed Analysis",
    "Appendix",
)
OPTIONAL_SECTIONS = ("Warnings", REPLAY_HEADING)  # present when there is something to say
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
    "✅ No compute kernel optimization opportunities identified: no compute category has a "
    "finding above the reporting thresholds. Kernel fusion and system items, if any, are in "
    "the Priorities table."
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
FUSION_NOTE_COMPARED = (
    "> **Experimental.** In a comparison a candidate is an operator both traces share that "
    "runs as more kernels in trace 1 than in trace 2; its saving is the measured time "
    "difference under that operator, not a model."
)
SYSTEM_NOTE_COMPARED = SYSTEM_NOTE + (
    " In a comparison the findings and their savings are trace 1's; each card adds trace 2's "
    "figure, and trace 2's system analyses are set against trace 1's below when both ran."
)


def position_icon(n: int) -> str:
    """Icon of the card numbered n (1-based, report-wide): P1 red, P2 yellow, P3+ green."""
    return POSITION_ICONS[n - 1] if 0 < n <= len(POSITION_ICONS) else LOW_ICON


def anchor(tier: str, n: int) -> str:
    return f"detailed-analysis-{tier}-p{n}"


def link(tier: str, n: int) -> str:
    return f"→ *See [Detailed Analysis: {LINK_LABEL[tier]} > P{n}](#{anchor(tier, n)}) for details*"


def report_title(run: ReportInputs) -> str:
    """The report's `# ` heading line (the page shows the same title)."""
    model = run.identity.model if run.identity else ""
    known = model and not model.startswith("Cannot be inferred")
    name = md_code(model) if known else "Unidentified model"
    if run.comparison is not None:
        return comparative_title(name, run.manifest.platform, run.comparison)
    platform = md_code(run.manifest.platform) if run.manifest.platform else "Unknown platform"
    return f"# {name} - {platform} Standalone Analysis"


def _icon(placed: Placed) -> str:
    if placed.tier == "fusion":
        return placed.card.icon or LOW_ICON
    return position_icon(placed.number)


def _card_text(placed: Placed) -> str:
    card, n, tier = placed.card, placed.number, placed.tier
    suffix = card.suffix if tier != "system" and card.suffix not in (None, "Unknown") else None
    marker = item_marker(placed.item) if placed.item else null_marker(n, placed.key)
    text = impact_text(placed)
    renumbered = PItem(
        n, card.title, suffix, _icon(placed), card.fields, marker, text, card.trailer
    )
    return f"{renumbered.render()}\n\n{link(tier, n)}\n\n---"


def _detail_text(placed: Placed) -> str:
    block, card, n = placed.block, placed.card, placed.number
    title = block.title or card.title
    if placed.tier == "fusion" and card.suffix:
        title = f"{card.title} ({card.suffix})"
    sections = [s for s in block.sections if s.label != "Impact estimate"]
    sections.append(estimate_section(placed))
    heading = f"{_icon(placed)} P{n}: {title}"
    renumbered = DetailBlock(placed.tier, n, heading, block.lead, tuple(sections))
    return f'<a id="{anchor(placed.tier, n)}"></a>\n\n{renumbered.render()}'


def _system_clear(run: ReportInputs) -> str:
    u = run.util
    return (
        f"✅ No system-level bottlenecks detected. GPU activity breakdown shows "
        f"{pct(u.computation_time_percent)} computation, "
        f"{pct(u.idle_time_percent)} idle, "
        f"{pct(u.exposed_comm_time_percent)} exposed communication and "
        f"{pct(u.exposed_memcpy_time_percent)} exposed memory copies."
    )


def compose_report(run: ReportInputs) -> str:
    """The complete ``analysis.md`` text (see the module docstring); the model's prose, when
    given, replaces the summary paragraph code writes."""
    placed = placed_cards(run.priorities.priorities, run.findings, run.metrics)
    by_tier = {t: sorted((p for p in placed if p.tier == t), key=lambda p: p.number)
               for t in INSIGHTS}  # fmt: skip
    cards = {t: [_card_text(p) for p in ps] for t, ps in by_tier.items()}

    compared = run.comparison is not None
    parts = [report_title(run), executive_summary(run, run.prose), priorities_table(run)]
    if aside := judgement.set_aside(placed):
        parts.append(aside)
    bought = what_fixing_buys(run.priorities)
    if bought:
        parts.append(bought)
    if compared and run.comparison.what_changed:
        parts.append(run.comparison.what_changed.strip())
    parts.append(what_we_saw(run.metrics, run.health))
    warn = warnings(run)
    if warn:
        parts.append(warn)
    parts += ["## Compute Kernel Optimizations", top_operations(run)]
    parts += cards["compute"] or [NO_COMPUTE]
    parts += ["## Kernel Fusion Opportunities (Experimental)"]
    parts += [FUSION_NOTE_COMPARED if compared else FUSION_NOTE]
    parts += cards["fusion"] or [NO_FUSION]
    parts += ["## System-Level Optimizations", SYSTEM_NOTE_COMPARED if compared else SYSTEM_NOTE]
    if compared and run.comparison.system is not None:  # both traces' figures, side by side
        parts.append(system_markdown(run.comparison.system))
    parts += cards["system"] or [_system_clear(run)]
    parts.append("## Detailed Analysis")
    if said := judgement.overviews(run.findings):
        parts.append(said)
    for tier, name in INSIGHTS.items():
        parts.append(f"### {name}")
        parts += [_detail_text(p) for p in by_tier[tier]] or ["No items in this tier."]
    parts.append(appendix(run))
    return "\n\n".join(parts) + "\n"
