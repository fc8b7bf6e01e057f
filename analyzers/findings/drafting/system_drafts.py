"""The system cards of the drafts (docs/analysis.md#findings): the GPU idle card of
`cpu_idle`, the copy, collective and overlap cards of `multi_kernel`. Each is flagged by its
metrics document; in a comparative run trace 2's document of the same analysis adds trace 2's
figure to the card (docs/compare.md#system-analyses-of-both-traces). System cards carry no
impact marker: their saving is ranked in the priorities.
"""

from __future__ import annotations

from ...categories.cpu_idle import CpuIdleMetrics, HostSide, IdleCauseShare
from ...categories.multi_kernel import MultiKernelMetrics
from ...markdown_text import md_code
from ...trace.host_causes import LABELS
from ...trace.host_filter import PARTIAL_HOST
from ..contract.contract import (
    NOT_QUANTIFIABLE,
    SYSTEM_IMPACT_SENTENCE,
    DetailBlock,
    Marker,
    PItem,
    Section,
    Table,
    num,
)
from ..ranking.idle_advice import ACTIONS, WHY, culprit_words, is_item
from .collective_draft import (
    collective_rows,
    collective_sentence,
)
from .copy_draft import copy_card
from .system_compare import (
    trace2_exposed_words,
    trace2_idle_words,
)


def system_pair(rank: int, title: str, insight: str, action: str, ident: str, rows, reason):
    card = PItem(
        rank, title, fields=(("Insight", insight), ("Action", action)),
        impact=Marker("p_item", (("low", "null"), ("mid", "null"), ("high", "null"))),
        impact_text=NOT_QUANTIFIABLE,
    )  # fmt: skip
    table = Table(("Metric", "Value", "Flagged"), tuple(rows))
    sections = (
        Section("Identification", ident),
        Section("Data", body=table.render()),
        Section("Reasoning for Slowdown", reason),
        Section("Resolution", action),
        Section("Impact estimate", SYSTEM_IMPACT_SENTENCE),
    )
    block = DetailBlock("system", rank, title, sections=sections)
    return card, block


def cpu_idle_pairs(m: CpuIdleMetrics, m2: CpuIdleMetrics | None = None) -> list:
    """The idle card, named for the cause that holds most of the idle the steady state can
    win back; `m2`, trace 2's metrics in a comparison, adds trace 2's idle time."""
    u = m.gpu_utilization
    if not m.idle_flagged or u is None:
        return []
    idle, pct, total = num(u.idle_time_ms), num(u.idle_time_percent), num(u.total_time_ms)
    rows = [
        ("Idle time", f"{idle} ms ({pct}%)", "true"),
        ("Total time", f"{total} ms", "false"),
        ("Computation", f"{num(u.computation_percent)}%", "false"),
        ("Communication", f"{num(u.communication_percent)}%", "false"),
        ("Memcpy", f"{num(u.memcpy_percent)}%", "false"),
    ]
    insight = f"The GPU is idle for {idle} ms of {total} ms ({pct}%), above the 15% threshold."
    host = m.host_side
    title, action, reason = f"GPU idle for {pct}% of the trace", GENERIC_ACTION, GENERIC_REASON
    if host is not None:
        rows += _cause_rows(host)
        main = main_cause(host)
        if main is not None:
            title += f": {LABELS[main.cause]}{culprit_words(main)}"
            insight += " " + _cause_sentence(host, main)
            why = WHY[main.cause]
            action, reason = ACTIONS[main.cause], why[:1].upper() + why[1:] + "."
        if host.phases is not None and host.phases.detail:
            insight += f" Phases: {host.phases.detail}."
        if host.host_partial:
            insight += " " + PARTIAL_HOST
    words2 = trace2_idle_words(m2) if m2 is not None else None
    if words2 is not None:
        rows.append(words2[0])
        insight += words2[1]
    ident = (
        "The GPU timeline shows gaps with no kernel running; each idle millisecond is named "
        "by what the host was doing (source: `cpu_idle_metrics.json` → `host_side`)."
    )
    return [system_pair(1, title, insight, action, ident, rows, reason)]


GENERIC_ACTION = (
    "Find what the host does between launches (profile with `with_stack=True`), then remove "
    "host synchronisations and prepare the next inputs while the GPU is busy."
)
GENERIC_REASON = "While the host launches kernels or waits on synchronisation, the GPU has no work."


def main_cause(host: HostSide) -> IdleCauseShare | None:
    """The cause with the most idle a fix could win back (steady state when known)."""
    items = [c for c in host.idle_causes if is_item(c.cause, host.host_recorded)]
    priced = [(c.idle_ms if c.steady_ms is None else c.steady_ms, c) for c in items]
    best = max(priced, key=lambda pair: pair[0], default=(0.0, None))
    return best[1] if best[0] > 0 else None


def _cause_rows(host: HostSide) -> list[tuple[str, str, str]]:
    return [
        (f"Idle: {LABELS[c.cause]}", f"{num(c.idle_ms)} ms ({num(c.percent_of_idle)}% of idle)",
         "false")
        for c in host.idle_causes
        if c.idle_ms > 0
    ]  # fmt: skip


def _cause_sentence(host: HostSide, main: IdleCauseShare) -> str:
    steady = ""
    if main.steady_ms is not None and abs(main.steady_ms - main.idle_ms) > 5e-4:
        steady = f", {num(main.steady_ms)} ms of it in steady state"
    share = f"{num(main.percent_of_idle)}% of it ({num(main.idle_ms)} ms{steady})"
    text = f"{share} is {LABELS[main.cause]}"
    if main.culprits:
        top = main.culprits[0]
        text += f": {md_code(top.name, 80)}"
        text += f" under {md_code(top.operator, 80)}" if top.operator else ""
        text += f", {top.count} calls" if top.count > 1 else ""
    unexplained = next((c for c in host.idle_causes if c.cause == "unexplained"), None)
    if unexplained is not None and unexplained.percent_of_idle >= 10:
        text += f"; {num(unexplained.percent_of_idle)}% has no host event recorded"
    return text + "."


def multi_kernel_pairs(m: MultiKernelMetrics, m2: MultiKernelMetrics | None = None) -> list:
    """The copy, collective and overlap cards; `m2`, trace 2's metrics in a comparison, adds
    trace 2's exposed time to the first two."""
    out: list = []
    src = "(source: `multi_kernel_metrics.json` → `{}`)."
    copies = copy_card(m)  # one card for every copy, whatever its direction
    if copies is not None:
        copy2 = trace2_exposed_words(m2, "copies") if m2 is not None else ""
        out.append((copies[0], copies[1] + copy2, *copies[2:]))
    nccl = m.nccl_blocking_assessment
    # each collective type with its count per step and source, on the first communication card
    collectives = (collective_sentence(m), collective_rows(m))
    if nccl.flagged:
        exp, pct = num(nccl.exposed_comm_time_ms), num(nccl.exposed_percent_of_total)
        rows = [
            ("Exposed communication", f"{exp} ms ({pct}%)", "true"),
            ("Total communication", f"{num(nccl.total_comm_time_ms)} ms", "false"),
            *collectives[1],
        ]
        out.append((
            f"Exposed collective communication is {pct}% of the trace",
            f"{exp} ms of collective communication ({pct}%) is not hidden behind compute."
            + (trace2_exposed_words(m2, "communication") if m2 is not None else "")
            + (f" {collectives[0]}" if collectives[0] else ""),
            "Overlap collectives with compute, for example by bucketing gradients or "
            "prefetching parameters.",
            "Collective communication kernels " + src.format("nccl_blocking_assessment"),
            rows,
            "While a collective runs without overlapping compute, the GPU does no model work.",
        ))  # fmt: skip
    overlap = m.overlap_assessment
    if overlap.flagged:
        pct, target = num(overlap.overlap_percent), num(overlap.target_percent)
        shown = nccl.flagged or not collectives[0]
        rows = [
            ("Overlap ratio", f"{pct}%", "true"),
            ("Target", f"{target}%", "false"),
            *([] if shown else collectives[1]),
        ]
        out.append((
            f"Communication overlaps compute for only {pct}% of its time",
            f"Communication overlaps compute for {pct}% of its time, under the {target}% target."
            + ("" if shown else f" {collectives[0]}"),
            "Schedule collectives on their own stream and issue them early so they run beside "
            "compute kernels.",
            "Communication and compute timelines " + src.format("overlap_assessment"),
            rows,
            "Communication that does not overlap compute adds directly to the step time.",
        ))  # fmt: skip
    return [system_pair(i, *args) for i, args in enumerate(out, 1)]
