"""The collective table in words (docs/analysis.md#multi-kernel): each collective type with
its count per step, median, overlap and source, for the communication cards.

Reads the multi-kernel metrics' collective table; trace text goes through `md_code`/`md_cell`.
"""

from __future__ import annotations

from ...categories.multi_kernel import MultiKernelMetrics
from ...markdown_text import md_cell, md_code
from ...prepare.collective_table import CollectiveGroup

PLURAL = {
    "all_reduce": "all-reduces",
    "all_gather": "all-gathers",
    "reduce_scatter": "reduce-scatters",
    "all_to_all": "all-to-alls",
    "broadcast": "broadcasts",
    "send_recv": "sends/receives",
    "reduce": "reduces",
}
BUCKET = (
    "many small collectives each pay the collective's latency and a launch: bucket them "
    "(DDP `bucket_cap_mb`, FSDP wrapping, or one flat buffer per step) and issue them early"
)
SETUP = "outside the steady state: a one-time cost"


def _source(g: CollectiveGroup, show=md_code) -> str:
    if not g.sources:
        return ""
    top = g.sources[0]
    text = f"from {show(top.call_site)}"
    if top.callers:
        text += " under " + "/".join(show(c) for c in top.callers)
    return text


def collective_phrase(g: CollectiveGroup) -> str:
    """`80 all-reduces a step (240 in all), median 12 µs, 0 % overlapped, from
    `_c10d_functional::all_reduce_` under `CompiledFunctionBackward``."""
    name = PLURAL.get(g.kind, f"{g.kind} collectives")
    per = g.timing.per_iteration
    if g.timing.steady_iterations and not g.timing.steady_count:
        head = f"{g.count} {name} ({SETUP})"
    elif per is not None:
        head = f"{per:g} {name} a step ({g.count} in all)"
    else:
        head = f"{g.count} {name}"
    text = f"{head}, median {float(g.median_us):g} µs, {float(g.overlap_percent):g} % overlapped"
    source = _source(g)
    return f"{text}, {source}" if source else text


def collective_sentence(m: MultiKernelMetrics) -> str:
    """Every collective type in one sentence, the advice for many small ones after; "" when
    the metrics have no collective table."""
    groups = m.collectives or []
    if not groups:
        return ""
    text = "; ".join(collective_phrase(g) for g in groups) + "."
    if any(g.many_small for g in groups):
        text += f" {BUCKET[:1].upper()}{BUCKET[1:]}."
    return text


def collective_rows(m: MultiKernelMetrics) -> list[tuple[str, str, str]]:
    """One card row per collective type: count per step, median, exposed, overlap, source."""
    rows = []
    for g in m.collectives or []:
        per = g.timing.per_iteration
        each = f", {per:g} a step" if per is not None else ""
        rows.append((
            f"{PLURAL.get(g.kind, g.kind)}",
            f"{g.count} kernels{each}, median {g.median_us} µs, "
            f"{float(g.exposed_us) / 1000:.3f} ms exposed, {g.overlap_percent}% overlapped "
            + _source(g, md_cell),
            "true" if g.many_small or float(g.overlap_percent) < 50 else "false",
        ))  # fmt: skip
    return rows
