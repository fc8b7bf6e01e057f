"""The multi-kernel draft's one copy card (docs/analysis.md#drafts): all copies, every
direction, judged against the link they cross, with the fixes that apply to copies.

Reads the multi-kernel metrics. Without the copy analysis (`copies`), the card is built
from the TraceLens-style per-direction issues.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...categories.copies import SMALL_COPY_BYTES, CopyAnalysis, CopyVerdict
from ...categories.multi_kernel import MemcpyIssue, MultiKernelMetrics
from ...markdown_text import md_cell, md_code
from ..ranking.candidates import MIN_SYSTEM_SHARE as MIN_SHARE
from ..ranking.copy_item import source_phrase

SOURCE = "(source: `multi_kernel_metrics.json` → `{}`)."
REASON = (
    "A copy is bound by the link it crosses, not by a compute roofline: a host copy from "
    "pageable memory is staged through a driver buffer and reaches a fraction of the link, and "
    "a copy with no kernel running beside it adds its whole time to the step."
)
DEFAULT_FIXES = (
    "pin the host buffer",
    "copy with `non_blocking=True`",
    "overlap the copy with compute on a side stream",
    "keep the tensor on the device",
)
LOW_LINK_PERCENT = 50.0  # a copy under half its link is flagged in the table


def has_copy_card(m: MultiKernelMetrics) -> bool:
    """The card is drafted when the memcpy assessment flagged any direction, or when the
    exposed copies are worth an item on the impact scale (so the item has its card)."""
    memcpy = m.memcpy_assessment
    return bool(memcpy.flagged and memcpy.issues) or _worth_an_item(m)


def _worth_an_item(m: MultiKernelMetrics) -> bool:
    copies, total = _copies(m), float(m.total_time_ms or 0.0)
    return copies is not None and total > 0 and copies.exposed_ms / total * 100 >= MIN_SHARE


def _copies(m: MultiKernelMetrics) -> CopyAnalysis | None:
    return m.copies if m.copies is not None and m.copies.groups else None


def copy_card(m: MultiKernelMetrics) -> tuple | None:
    """(title, insight, action, identification, rows, reason) of the copy card, or None."""
    if not has_copy_card(m):
        return None
    copies = _copies(m)
    if copies is not None:
        return _judged(copies, float(m.total_time_ms or 0.0))
    return _by_direction(m.memcpy_assessment.issues or [])


def _share(part: float, total: float) -> str:
    return f"{part / total * 100:.2f}" if total > 0 else "0.00"


def _judged(copies: CopyAnalysis, total_ms: float) -> tuple:
    groups = copies.groups
    time, exposed = round(float(copies.time_ms), 3), round(float(copies.exposed_ms), 3)
    rows = []
    for g in groups:
        size = f", {g.megabytes} MB" if g.megabytes is not None else ""
        rows.append((
            md_cell(g.name),
            f"{g.count} copies{size}, {g.time_ms} ms ({g.exposed_ms} ms exposed)",
            "true" if g.exposed_ms > 0 else "false",
        ))  # fmt: skip
        if g.percent_of_link is not None:
            big = (g.megabytes or 0.0) * 1e6 / g.count >= SMALL_COPY_BYTES  # else latency-bound
            low = big and g.percent_of_link < LOW_LINK_PERCENT
            rows.append((
                f"{md_cell(g.name)} bandwidth",
                f"{g.achieved_gbps} GB/s, {g.percent_of_link}% of {_link(g, md_cell)} "
                f"({g.link_gbps} GB/s)",
                "true" if low else "false",
            ))  # fmt: skip
        rows += _source_rows(g)
    parts = "; ".join(_group_phrase(g) for g in groups)
    insight = (
        f"{sum(g.count for g in groups)} copies take {time} ms "
        f"({_share(time, total_ms)}% of the trace), {exposed} ms of it with no kernel beside "
        f"them: {parts}."
    )
    action = _sentence(copies.fixes or DEFAULT_FIXES)
    ident = "Every copy by name, against the link it crosses " + SOURCE.format("copies")
    title = f"Copies take {time} ms ({_share(time, total_ms)}% of the trace), {exposed} ms exposed"
    source = source_phrase(groups[0])
    if source:
        title += f": {source}"
        insight += f" {source[:1].upper()}{source[1:]}."
    return title, insight, action, ident, rows, REASON


def _source_rows(g: CopyVerdict) -> list[tuple[str, str, str]]:
    """One row per call site of the group: its share, count per step, exposed time, phase."""
    by_phase = g.timing.by_phase_us if g.timing is not None else {}
    steps = int(g.timing.steady_iterations or 0) if g.timing is not None else 0
    phases = ", ".join(f"{k} {v / 1000:.3f} ms" for k, v in by_phase.items())
    steady_only = set(by_phase) == {"steady"}
    rows = []
    for s in g.sources:
        under = "/".join(md_cell(c) for c in s.callers)
        where = f"{md_cell(s.call_site)}" + (f" under {under}" if under else "")
        each = f", {s.count / steps:g} a step" if steps and steady_only else ""
        place = (("module", s.module), ("frame", s.frame))
        rows.append((
            f"{md_cell(g.name)} from {where}",
            f"{s.percent_of_group}% of the group: {s.count} copies{each}, "
            f"{s.exposed_us / 1000:.3f} ms exposed ({phases or 'no phase'})"
            + "".join(f", {k} {md_cell(v)}" for k, v in place if v),
            "true" if s.percent_of_group >= 50 else "false",
        ))  # fmt: skip
    return rows


def _group_phrase(g: CopyVerdict) -> str:
    text = f"{g.count} × {md_code(g.name)}"
    if g.percent_of_link is not None:
        text += f" at {g.percent_of_link}% of {_link(g)}"
    return text


def _link(g: CopyVerdict, show: Callable[[object], str] = md_code) -> str:
    """HBM, or the link a platform (maybe a user's file) names, as a code span (`md_cell`
    in a table)."""
    return "HBM" if g.link == "HBM" else f"the {show(g.link)} link"


def _by_direction(issues: Sequence[MemcpyIssue]) -> tuple:
    rows, phrases = [], []
    for issue in issues:
        d = issue.direction
        rows += [
            (f"{d} copies", str(issue.count), "true"),
            (f"{d} time", f"{issue.time_ms} ms ({issue.percent_of_total}%)", "true"),
            (f"{d} average size", f"{issue.avg_bytes} bytes", "false"),
        ]
        phrases.append(f"{issue.count} {d} copies take {issue.time_ms} ms")
    time = round(sum(float(i.time_ms or 0.0) for i in issues), 3)
    pct = round(sum(float(i.percent_of_total or 0.0) for i in issues), 2)
    title = f"Host-device copies take {time} ms, {pct}% of the trace"
    ident = "Host-device copies by direction " + SOURCE.format("memcpy_assessment.issues")
    return title, "; ".join(phrases) + ".", _sentence(DEFAULT_FIXES), ident, rows, REASON


def _sentence(fixes: Sequence[str]) -> str:
    text = "; ".join(fixes)
    return text[:1].upper() + text[1:] + "."
