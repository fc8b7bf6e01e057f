"""The report's "What this analysis could and could not see" (docs/analysis.md#the-report):
how much kernel time has a roofline, what was left unmodelled and why, and every
trace-health warning with what it weakens and how to profile again.

Which rows count as modelled, and the reason each other row states, come from unmodelled.py:
only modelled rows count as kernel time with a roofline. Category and operation names are
code spans, health messages escaped prose (docs/analysis.md#trace-text-in-markdown).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ...categories.any_metrics import Metrics
from ...categories.models import CategoryMetrics, Operation
from ...markdown_text import md_cell, md_code, md_prose
from ...perf.kernel_names import short_kernel_name
from ...perf.platform_choice import NO_PLATFORM
from ...trace.health import HealthWarning, Severity
from ..ranking.unmodelled import modelled, reason_md, unmodelled_reason
from .cards import ms

HEADING = "What this analysis could and could not see"
TOP_UNMODELLED = 5
SEVERITY_ICONS: dict[Severity, str] = {"error": "⛔", "warning": "⚠️", "info": "ℹ️"}


@dataclass(frozen=True)
class Coverage:
    """A compute category's kernel time and the part of it with a roofline."""

    category: str
    kernel_ms: float
    modelled_ms: float

    @property
    def percent(self) -> float:
        return self.modelled_ms / self.kernel_ms * 100 if self.kernel_ms > 0 else 0.0


def coverage(metrics: Mapping[str, Metrics]) -> list[Coverage]:
    """Per compute category with operations, in the files' order."""
    rows = []
    for key in sorted(metrics, key=lambda k: f"{k}_metrics.json"):
        found = metrics[key]
        if not isinstance(found, CategoryMetrics) or not found.operations:
            continue
        ops = found.operations
        total = sum(op.time_ms for op in ops)
        rows.append(
            Coverage(found.category or key, total, sum(o.time_ms for o in ops if modelled(o)))
        )
    return rows


def _unmodelled(metrics: Mapping[str, Metrics]) -> list[tuple[str, Operation]]:
    found = [
        (m.category or key, op)
        for key, m in metrics.items()
        if isinstance(m, CategoryMetrics)
        for op in m.operations or ()
        if not modelled(op) and op.time_ms > 0
    ]
    return sorted(found, key=lambda pair: (-pair[1].time_ms, pair[0], pair[1].name))


def _coverage_part(rows: list[Coverage]) -> str:
    if not rows:
        return (
            "**Roofline coverage.** No compute category has operations, so nothing was "
            "scored against a roofline."
        )
    total = sum(r.kernel_ms for r in rows)
    covered = sum(r.modelled_ms for r in rows)
    share = covered / total * 100 if total > 0 else 0.0
    lead = (
        f"**Roofline coverage.** {share:.1f} % of the compute categories' kernel time "
        f"({ms(covered)} of {ms(total)} ms) ran in operations with a performance "
        "model: only those have a roofline efficiency and a measured estimate; the rest are "
        "not quantifiable (no saving on the impact scale)."
    )
    head = "| Category | Kernel time (ms) | With a roofline (ms) | Coverage |"
    body = [head, "| --- | --- | --- | --- |"]
    body += [
        f"| {md_cell(r.category)} | {ms(r.kernel_ms)} | {ms(r.modelled_ms, r.kernel_ms)} "
        f"| {r.percent:.1f} % |"
        for r in rows
    ]
    return lead + "\n\n" + "\n".join(body)


def _unmodelled_part(metrics: Mapping[str, Metrics]) -> str:
    found = _unmodelled(metrics)
    if not found:
        return "**Unmodelled.** Every operation of the compute categories has a roofline."
    lines = ["**Unmodelled.** The largest operations without a usable roofline:"]
    lines += [
        f"- {md_code(short_kernel_name(op.name))} ({md_code(category)}, {ms(op.time_ms)} ms): "
        f"{reason_md(unmodelled_reason(op))}."
        for category, op in found[:TOP_UNMODELLED]
    ]
    rest = found[TOP_UNMODELLED:]
    if rest:
        lines.append(f"- and {len(rest)} more ({ms(sum(op.time_ms for _, op in rest))} ms).")
    return "\n".join(lines)


def _health_part(warnings: Iterable[HealthWarning] | None) -> str:
    if warnings is None:
        return "**Trace health.** Not assessed for this report."
    found = list(warnings)
    if not found:
        return (
            "**Trace health.** No warning: nothing the health check looks for is missing "
            "(GPU work linked to its launches, operators and their shapes, call stacks, module "
            "names, profiler steps)."
        )
    lines = ["**Trace health.** What the trace lacks, what it weakens, how to profile again:"]
    lines += [
        f"- {SEVERITY_ICONS[w.severity]} {md_code(w.code)}: {md_prose(w.message)}" for w in found
    ]
    return "\n".join(lines)


def _no_platform_part(rows: list[Coverage]) -> str:
    total = sum(r.kernel_ms for r in rows)
    return (
        f"**Roofline coverage.** None: no platform is known, so none of the compute "
        f"categories' {ms(total)} ms of kernel time was scored against a roofline and no "
        "operation has a roofline efficiency or a measured estimate (none has a saving); "
        f"the `{NO_PLATFORM}` warning below says how to pass a platform. The timeline, "
        "categories, host side, copies and kernel fusion do not need one."
    )


def what_we_saw(metrics: Mapping[str, Metrics], health: Iterable[HealthWarning] | None) -> str:
    """The section: coverage by category, the unmodelled operations, the health warnings.
    Without a platform (the run's `no_platform` warning) coverage is one sentence and no
    operation is listed as unmodelled: every one is, for that reason."""
    warnings = None if health is None else list(health)
    if any(w.code == NO_PLATFORM for w in warnings or ()):
        parts = [f"## {HEADING}", _no_platform_part(coverage(metrics))]
    else:
        parts = [f"## {HEADING}", _coverage_part(coverage(metrics)), _unmodelled_part(metrics)]
    parts.append(_health_part(warnings))
    return "\n\n".join(parts)
