"""The words of a comparative compute card: trace 1 against trace 2 (docs/analysis.md#findings).

In comparative scope a group's `efficiency_pct` is 100 × trace-2 time / trace-1 time for the
same work, so the card states the difference (how much slower trace 1 is, and the times) and
never a roofline share. Trace 2's time of an operation is that of the nearest operator both
traces share, which several trace-1 operations can have in common; a group of several
operations is therefore described by its span of ratios, and times are given per operation
only when the group holds one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from rooflens.analyzers.findings.contract import Table

CAUSE = (
    "The traces show which kernels ran and for how long, not why trace 2's were faster "
    "(library version, compiler flags, clocks, autotuning); across two GPUs the ratio also "
    "mixes hardware and software."
)
ACTIONS = {
    "compute": "Look at the kernels trace 2 runs for these shapes (What changed) and try that "
    "library, algorithm or tuning for trace 1; a side-by-side benchmark of the shape confirms it.",
    "memory": "Check how trace 2 reads the same data (fewer kernels, another layout or a fused "
    "kernel, in What changed) and bring that to trace 1; a side-by-side benchmark confirms it.",
}
DEFAULT_ACTION = (
    "Compare the kernels each trace runs for these operations (What changed) and move trace 1 "
    "to what trace 2 does; a side-by-side benchmark of the shape confirms the cause."
)


class ComparedWords(NamedTuple):
    title: str
    insight: str
    reason: str
    action: str


def _num(value: Any) -> str:
    return "—" if value is None else str(value)


def slower_by(ratio_pct: float) -> str:
    """`52.1 % slower`: how much more time trace 1 takes, from trace 2's share of its time."""
    if ratio_pct <= 0:
        return "slower"
    return f"{(100 / ratio_pct - 1) * 100:.1f} % slower"


def comparative_words(
    finding: Mapping, members: list[Mapping], ops: list[Mapping | None], category: str,
    time_ms: float, count: str,
) -> ComparedWords:  # fmt: skip
    """Title, insight, reason and action of a quantified comparative group."""
    bound = str(finding.get("bound_type") or "unknown")
    ratios = [float(m["efficiency_pct"]) for m in members if m.get("efficiency_pct") is not None]
    worst = min(ratios) if ratios else None
    single = ops[0] if len(members) == 1 and ops and ops[0] is not None else None
    if single is not None and single.get("t2_time_ms") is not None:
        t1, t2 = single.get("time_ms"), single.get("t2_time_ms")
        times = f"{_num(t1)} ms in trace 1 against {_num(t2)} ms in trace 2"
    else:
        times = f"{_num(time_ms)} ms in trace 1"
    if not ratios:
        span = "an unknown share"
    elif min(ratios) == max(ratios):
        span = f"{ratios[0]} %"
    else:
        span = f"{min(ratios)}–{max(ratios)} %"
    way = slower_by(worst) if worst is not None else "slower"
    title = f"{category} ops {way} than trace 2"
    insight = f"{count} ({times}) {'is' if count.startswith('1 ') else 'are'} {way} in trace 1."
    reason = (
        f"Trace 2 does the same work in {span} of trace 1's time "
        f"(100 × trace-2 time / trace-1 time). {CAUSE}"
    )
    if any(((o or {}).get("efficiency") or {}).get("warning") for o in ops):
        reason += (
            " Where trace 2 is faster than trace 1's roofline allows, the gap counted stops at "
            "the roofline."
        )
    return ComparedWords(title, insight, reason, ACTIONS.get(bound, DEFAULT_ACTION))


KERNEL_COLUMNS = ("Kernel", "Type", "Duration (us)")
FUSION_ACTION_COMPARED = (
    "Run this operator the way trace 2 does, with the fused kernel listed in the data, or fuse "
    "trace 1's chain with a compiler; the traces do not say which setting made trace 2 fuse."
)


def _cell(value: Any) -> str:
    return _num(value).replace("|", "\\|") or "—"


def fusion_kernel_tables(candidate: Mapping) -> str:
    """A comparative fusion block's Data: the kernels each trace runs under the operator
    (the contract's Trace 1 kernels / Trace 2 kernels tables)."""
    parts = []
    for n in (1, 2):
        label, key = f"Trace {n} kernels", f"kernels_trace{n}"
        rows = tuple(
            (_cell(k.get("name")), _cell(k.get("type")), _cell(k.get("dur_us")))
            for k in candidate.get(key) or ()
        )
        parts.append(f"**{label}**\n\n" + Table(KERNEL_COLUMNS, rows).render())
    return "\n\n".join(parts)


def fusion_insight(candidate: Mapping) -> str:
    """`moe_layer runs as 4 kernels in trace 1 against 1 in trace 2 (1.16 ms against 0.8 ms).`"""
    t1 = float(candidate.get("total_kernel_time_us_trace1") or 0) / 1000
    t2 = float(candidate.get("total_kernel_time_us_trace2") or 0) / 1000
    return (
        f"{candidate.get('base_name')} runs as {_num(candidate.get('kernel_count_trace1'))} "
        f"kernels in trace 1 against {_num(candidate.get('kernel_count_trace2'))} in trace 2 "
        f"({t1:,.3f} ms against {t2:,.3f} ms over {_num(candidate.get('instance_count'))} "
        "instances)."
    )
