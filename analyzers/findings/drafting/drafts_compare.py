"""The words of a comparative compute card: trace 1 against trace 2 (docs/analysis.md#findings).

In comparative scope a group's `efficiency_pct` is 100 × trace-2 time / trace-1 time for the
same work, so the card states the difference (how much slower trace 1 is, and the times) and
never a roofline share. Trace 2's time of an operation is that of the nearest operator both
traces share, which several trace-1 operations can have in common; a group of several
operations is therefore described by its span of ratios, and times are given per operation
only when the group holds one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel, ConfigDict

from ...markdown_text import md_cell, md_code
from ..contract.contract import Table

if TYPE_CHECKING:
    from ...categories.models import Finding, ImpactEstimate, Operation

CAUSE = (
    "The traces show which kernels ran and for how long, not why trace 2's were faster "
    "(library version, compiler flags, clocks, autotuning); across two GPUs the ratio also "
    "mixes hardware and software."
)
DEFAULT_ACTION = (
    "Compare the kernels each trace runs for these operations (What changed) and move trace 1 "
    "to what trace 2 does; a side-by-side benchmark of the shape confirms the cause."
)
ACTIONS = {  # one per Finding.bound_type
    "compute": "Look at the kernels trace 2 runs for these shapes (What changed) and try that "
    "library, algorithm or tuning for trace 1; a side-by-side benchmark of the shape confirms it.",
    "memory": "Check how trace 2 reads the same data (fewer kernels, another layout or a fused "
    "kernel, in What changed) and bring that to trace 1; a side-by-side benchmark confirms it.",
    "unknown": DEFAULT_ACTION,
    "unmodeled": DEFAULT_ACTION,
}


class ComparedWords(NamedTuple):
    title: str
    insight: str
    reason: str
    action: str


def _num(value: Any) -> str:
    return "—" if value is None else str(value)


def slower_by(ratio_pct: float) -> str:
    """How much more time trace 1 takes, from trace 2's time as a % of trace 1's: `52.1 %
    slower`, or `50.0× slower` past 2.5 times (a percentage that large reads badly)."""
    if ratio_pct <= 0:
        return "slower"
    times = 100 / ratio_pct
    return f"{times:.1f}× slower" if times > 2.5 else f"{(times - 1) * 100:.1f} % slower"


def _share(values: list[float]) -> str:
    if not values:
        return "an unknown share"
    low, high = min(values), max(values)
    return f"{low:g} %" if low == high else f"{low:g}–{high:g} %"


def comparative_words(
    finding: Finding, members: Sequence[ImpactEstimate], ops: Sequence[Operation | None],
    category: str, time_ms: float, count: str,
) -> ComparedWords:  # fmt: skip
    """Title, insight, reason and action of a quantified comparative group. One operation is
    described by its two times; a group by its members' ratios (several members can share
    one trace-2 operator, whose time must not be added up)."""
    bound = str(finding.bound_type or "unknown")
    single = ops[0] if len(members) == 1 and ops and ops[0] is not None else None
    t1 = float(single.time_ms or 0.0) if single is not None else 0.0
    t2 = single.t2_time_ms if single is not None else None
    if single is not None and t2 is not None and t1 > 0 and float(t2) > 0:
        ratios = [round(100 * float(t2) / t1, 2)]
        times = f"{_num(single.time_ms)} ms in trace 1 against {_num(t2)} ms in trace 2"
    else:
        ratios = [float(m.efficiency_pct) for m in members if m.efficiency_pct]
        times = f"{_num(time_ms)} ms in trace 1"
    way = slower_by(min(ratios)) if ratios else "slower"
    title = f"{md_code(category)} ops {way} than trace 2"
    insight = f"{count} ({times}) {'is' if count.startswith('1 ') else 'are'} {way} in trace 1."
    reason = (
        f"Trace 2 does the same work in {_share(ratios)} of trace 1's time "
        f"(100 × trace-2 time / trace-1 time). {CAUSE}"
    )
    capped = [o for o in ops if o is not None and o.efficiency.warning]
    if capped:
        floor = _share([float(m.efficiency_pct) for m in members if m.efficiency_pct])
        reason += (
            f" Trace 2 is faster than trace 1's roofline allows, so the saving counts the gap "
            f"only down to that roofline ({floor} of trace 1's time)."
        )
    return ComparedWords(title, insight, reason, ACTIONS[bound])


KERNEL_COLUMNS = ("Kernel", "Type", "Duration (us)")
FUSION_ACTION_COMPARED = (
    "Run this operator the way trace 2 does, with the fused kernel listed in the data, or fuse "
    "trace 1's chain with a compiler; the traces do not say which setting made trace 2 fuse."
)


class KernelRun(BaseModel):
    """One kernel a trace runs under a compared operator (numbers kept as recorded)."""

    model_config = ConfigDict(frozen=True)

    name: str | None = None
    type: str | None = None
    dur_us: int | float | None = None


class FusionComparison(BaseModel):
    """What a comparative fusion card shows of its candidate: the kernels each trace runs
    under the operator and their time (a comparative run's `fusion_candidates.json` entry)."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    base_name: str | None = None
    instance_count: int | None = None
    kernel_count_trace1: int | None = None
    kernel_count_trace2: int | None = None
    total_kernel_time_us_trace1: float | None = None
    total_kernel_time_us_trace2: float | None = None
    kernels_trace1: list[KernelRun] = []
    kernels_trace2: list[KernelRun] = []

    @classmethod
    def of(cls, candidate: Any) -> FusionComparison:
        """From the candidate (a `ComparativeCandidate`) or its document read from the run."""
        if isinstance(candidate, Mapping):
            return cls.model_validate(candidate)
        return cls.model_validate(candidate, from_attributes=True)


def _cell(value: Any) -> str:
    return _num(value).replace("|", "\\|") or "—"


def fusion_kernel_tables(candidate: FusionComparison) -> str:
    """A comparative fusion block's Data: the kernels each trace runs under the operator
    (the contract's Trace 1 kernels / Trace 2 kernels tables)."""
    parts = []
    for n, kernels in ((1, candidate.kernels_trace1), (2, candidate.kernels_trace2)):
        rows = tuple((md_cell(_num(k.name)), _cell(k.type), _cell(k.dur_us)) for k in kernels)
        parts.append(f"**Trace {n} kernels**\n\n" + Table(KERNEL_COLUMNS, rows).render())
    return "\n\n".join(parts)


def fusion_insight(candidate: FusionComparison) -> str:
    """`moe_layer runs as 4 kernels in trace 1 against 1 in trace 2 (1.16 ms against 0.8 ms).`"""
    t1 = float(candidate.total_kernel_time_us_trace1 or 0) / 1000
    t2 = float(candidate.total_kernel_time_us_trace2 or 0) / 1000
    return (
        f"{md_code(_num(candidate.base_name))} runs as "
        f"{_num(candidate.kernel_count_trace1)} "
        f"kernels in trace 1 against {_num(candidate.kernel_count_trace2)} in trace 2 "
        f"({t1:,.3f} ms against {t2:,.3f} ms over {_num(candidate.instance_count)} "
        "instances)."
    )
