"""The report's "What fixing each would buy": each finding a change expresses, replayed with
the fix, the top fixes together, and the items whose saving stays a flat estimate
(docs/what-if.md#in-the-report-the-tools-and-the-files). Trace names are code spans
(docs/analysis.md#trace-text-in-markdown)."""

from __future__ import annotations

from ...markdown_text import md_cell, md_prose
from ..ranking.impact_scale import PriorityItem
from ..ranking.priorities import PriorityData
from ..ranking.replay_figures import ReplayPrice
from .cards import events_cell, ms, ms_range, next_on_path, path_words

HEADING = "What fixing each would buy"
HEAD = (
    "| P | Change replayed | On the critical path | Step (ms) | Saving per step (ms) | "
    "Critical next |\n| --- | --- | --- | --- | --- | --- |"
)


def what_fixing_buys(priorities: PriorityData) -> str | None:
    """The section, or None when nothing is ranked."""
    items = priorities.priorities
    summary = priorities.replay
    if not items or summary is None:
        return None
    parts = [f"## {HEADING}"]
    if not summary.replayable:
        parts.append(
            "The trace cannot be replayed, so every saving above is a flat estimate: "
            f"{_sentence(summary.reason)}"
        )
        return "\n\n".join(parts)
    steps = {0: "the window", 1: "the one steady iteration"}.get(
        summary.steps, f"the median of {summary.steps} steady iterations"
    )
    parts.append(
        "The replay (docs/what-if.md) re-times the trace's own events with each fix applied: "
        "the time per step it predicts (when each steady step's host work and the GPU work "
        f"it launched are done, {ms(summary.time_per_step_ms)} ms a step now; {steps}: "
        f"{ms(summary.replayed_step_ms)} ms replayed, {ms(summary.measured_step_ms)} ms "
        f"measured, identity error {summary.replay_error_pct:.2f} %), the saving per step and "
        "what sets the pace next. A finding off the critical path buys nothing until the path "
        "moves."
    )
    priced = [i for i in items if i.replay is not None and i.replay.predicted_step_ms is not None]
    if priced:
        parts.append("\n".join([HEAD, *(_row(i, i.replay) for i in priced)]))
    together = summary.combined
    if together is not None:
        named = " + ".join(f"P{p}" for p in together.p_numbers)
        parts.append(
            f"**Together**, {named}, each at its high bound: predicted step "
            f"{ms(together.predicted_step_ms)} ms, {ms(together.saving_ms)} ms saved per step "
            f"(their own high savings add up to {ms(together.sum_of_savings_ms)} ms)"
            f"{next_on_path(together.critical_next)}."
        )
    flat = [i for i in items if i.saving is not None and i not in priced]
    if flat:
        parts.append(
            "Flat estimates (no change the replay can express; their savings are the shares "
            "of the time stated on each card): " + ", ".join(f"P{i.p_number}" for i in flat) + "."
        )
    return "\n\n".join(parts)


def _row(item: PriorityItem, price: ReplayPrice) -> str:
    low, mid, high = price.step_saving_low_ms, price.step_saving_mid_ms, price.step_saving_high_ms
    saving = f"{ms(mid or 0.0, high or 0.0)} ({ms_range(low or 0.0, high or 0.0)})"
    nxt = price.critical_next
    return (
        f"| P{item.p_number} | {events_cell(price)}, {price.change} | {path_words(price)} | "
        f"{ms(price.step_ms)} → {ms(price.predicted_step_ms or 0.0)} | {saving} | "
        f"{'—' if nxt is None else md_cell(nxt.name, 80) + f' ({nxt.kind})'} |"
    )


def _sentence(text: str) -> str:
    """A refusal message (rooflens's words with figures) as escaped prose."""
    return md_prose(text, 300)
