"""The page's timeline strips (docs/analysis.md#the-page): one inline SVG per iteration
showing when the GPU was busy, the idle gaps coloured by cause, and where each P-item's
time falls, drawn from the findings' time ranges (trace/time_ranges.py).

A finding keeps only its longest ranges, so a strip draws those (a tooltip on each says
which); the iteration's own idle total, from the idle analysis, is written beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...categories.cpu_idle import HostSide, IdleCauseShare
from ...html_text import html_text
from ...trace.host_causes import LABELS
from ...trace.time_ranges import TimeRange
from ..ranking.impact_scale import PriorityItem

MAX_STRIPS = 12  # iterations drawn (the first ones); the rest are counted
MAX_ITEMS = 6  # P-item rows under a strip (the best ranked with ranges)
WIDTH, LABEL = 960, 56  # the SVG's width and its label column, in user units
BAR, ROW, GAP, SHARE = 22, 12, 3, 12
BUSY, BACK = "#9ccc9c", "#e4e7eb"
CAUSE_COLOURS = {
    "profiler": "#b0b0b0",
    "gpu_wait": "#7fa7d9",
    "one_off": "#c9b27c",
    "allocator": "#e06666",
    "sync": "#f6a04d",
    "input_pipeline": "#8e7cc3",
    "collective_issue": "#4fb3bf",
    "optimizer_step": "#d5a6bd",
    "launch_bound": "#ffd966",
    "dispatch": "#f4cccc",
    "unexplained": "#cccccc",
}
ITEM_COLOURS = ("#a93226", "#b9770e", "#1f618d", "#117a65", "#76448a", "#4d5656")


@dataclass(frozen=True)
class _Strip:
    label: str
    span: TimeRange
    idle_note: str
    idle_by_cause_ms: dict[str, float] | None = None  # the iteration's idle, whole, by cause


def strips(host: HostSide | None, items: Sequence[PriorityItem]) -> str:
    """The strips and their legend as HTML (empty when nothing has ranges)."""
    causes = [c for c in host.idle_causes if c.time_ranges] if host is not None else []
    placed = [i for i in items if i.time_ranges is not None][:MAX_ITEMS]
    rows = _strips(host, causes, placed)
    if not rows:
        return ""
    out = [_svg(s, causes, placed) for s in rows[:MAX_STRIPS]]
    if len(rows) > MAX_STRIPS:
        out.append(f"<p class='note'>The first {MAX_STRIPS} of {len(rows)} iterations.</p>")
    return "\n".join([*out, _legend(causes, placed)])


def _strips(
    host: HostSide | None, causes: list[IdleCauseShare], items: list[PriorityItem]
) -> list[_Strip]:
    if host is not None and host.iteration_ranges:
        per = host.per_iteration
        warm = host.warmup_range
        out = []
        for k, span in enumerate(host.iteration_ranges):
            it = per[k] if k < len(per) else None
            label = it.label if it is not None else f"iteration {k + 1}"
            note, by_cause = "", None
            if it is not None:
                phase = " (warm-up)" if it.phase == "warmup" else ""
                note = f"{it.host_ms:,.2f} ms, GPU idle {it.idle_ms:,.2f} ms{phase}"
                by_cause = dict(it.idle_by_cause_ms)
            elif warm is not None and span.start_us < warm.end_us:
                note = "warm-up"
            out.append(_Strip(label, span, note, by_cause))
        return out
    spans = [c.time_ranges for c in causes] + [i.time_ranges for i in items]
    known = [s for s in spans if s is not None]
    if not known:
        return []
    first, last = min(s.first_us for s in known), max(s.last_us for s in known)
    return [_Strip("the window", TimeRange(start_us=first, end_us=last), "")]


def _svg(strip: _Strip, causes: list[IdleCauseShare], items: list[PriorityItem]) -> str:
    span = strip.span
    scale = (WIDTH - LABEL) / max(span.dur_us, 1e-9)

    def x(t: float) -> float:
        return LABEL + (min(max(t, span.start_us), span.end_us) - span.start_us) * scale

    rows = [i for i in items if _inside(i.time_ranges.longest, span)]  # type: ignore[union-attr]
    top = 0 if strip.idle_by_cause_ms is None else SHARE + GAP
    height = top + BAR + GAP + len(rows) * (ROW + GAP)
    out = [
        f"<svg class='strip' viewBox='0 0 {WIDTH} {height}' role='img' "
        f"aria-label='{html_text(strip.label)}'>",
        *_shares(strip),
        f"<text x='0' y='{top + BAR - 7}' class='lbl'>gaps</text>",
        f"<rect x='{LABEL}' y='{top}' width='{WIDTH - LABEL}' height='{BAR}' fill='{BUSY}'>"
        "<title>GPU busy, or idle in gaps shorter than the ones drawn</title></rect>",
    ]
    for cause in causes:
        colour = CAUSE_COLOURS.get(cause.cause, "#999999")
        for r in _inside(cause.time_ranges.longest, span):  # type: ignore[union-attr]
            tip = f"idle: {cause.label}, {r.dur_us / 1e3:,.3f} ms at {r.start_us:,.0f} µs"
            out.append(_rect(x(r.start_us), x(r.end_us), top, BAR, colour, tip))
    for n, item in enumerate(rows):
        y = top + BAR + GAP + n * (ROW + GAP)
        colour = ITEM_COLOURS[items.index(item) % len(ITEM_COLOURS)]
        out.append(f"<text x='0' y='{y + ROW - 2}' class='lbl'>P{item.p_number}</text>")
        for r in _inside(item.time_ranges.longest, span):  # type: ignore[union-attr]
            tip = f"P{item.p_number}: {r.dur_us / 1e3:,.3f} ms at {r.start_us:,.0f} µs"
            out.append(_rect(x(r.start_us), x(r.end_us), y, ROW, colour, tip))
    out.append("</svg>")
    head = f"<div class='strip-head'><strong>{html_text(strip.label)}</strong>"
    head += f" <span class='note'>{html_text(strip.idle_note)}</span></div>"
    return f"<div class='strip-box'>{head}{''.join(out)}</div>"


def _shares(strip: _Strip) -> list[str]:
    """The iteration's idle time by cause, as shares of its length, left to right."""
    if strip.idle_by_cause_ms is None:
        return []
    host_ms = strip.span.dur_us / 1e3
    out = [
        f"<text x='0' y='{SHARE - 2}' class='lbl'>idle</text>",
        f"<rect x='{LABEL}' y='0' width='{WIDTH - LABEL}' height='{SHARE}' fill='{BACK}'>"
        "<title>the iteration's time the GPU was not idle</title></rect>",
    ]
    at = float(LABEL)
    for cause, idle_ms in strip.idle_by_cause_ms.items():
        w = (WIDTH - LABEL) * min(idle_ms / host_ms, 1.0) if host_ms > 0 else 0.0
        share = idle_ms / host_ms * 100 if host_ms > 0 else 0.0
        tip = f"idle: {LABELS.get(cause, cause)}, {idle_ms:,.3f} ms ({share:.1f} % of it)"
        out.append(_rect(at, at + w, 0, SHARE, CAUSE_COLOURS.get(cause, "#999999"), tip))
        at += w
    return out


def _rect(x0: float, x1: float, y: float, h: float, colour: str, tip: str) -> str:
    w = max(x1 - x0, 1.0)  # a range shorter than a unit stays visible
    return (
        f"<rect x='{x0:.1f}' y='{y}' width='{w:.1f}' height='{h}' fill='{colour}'>"
        f"<title>{html_text(tip, None)}</title></rect>"
    )


def _inside(ranges: list[TimeRange], span: TimeRange) -> list[TimeRange]:
    return [r for r in ranges if r.end_us > span.start_us and r.start_us < span.end_us]


def _legend(causes: list[IdleCauseShare], items: list[PriorityItem]) -> str:
    keys = [("GPU busy", BUSY)]
    keys += [(f"idle: {c.label}", CAUSE_COLOURS.get(c.cause, "#999999")) for c in causes]
    keys += [(f"P{i.p_number}", ITEM_COLOURS[k % len(ITEM_COLOURS)]) for k, i in enumerate(items)]
    swatches = "".join(
        f"<span class='key'><svg width='12' height='12'><rect width='12' height='12' "
        f"fill='{colour}'/></svg>{html_text(label)}</span>"
        for label, colour in keys
    )
    return (
        f"<div class='legend'>{swatches}</div><p class='note'><em>idle</em>: how much of the "
        "iteration the GPU sat idle, by cause; <em>gaps</em> and the P-rows: the longest idle "
        "gaps of each cause and the longest ranges of each P-item where they happened. Hover "
        "a mark for its time on the trace's clock (µs).</p>"
    )
