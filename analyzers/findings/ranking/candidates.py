"""Every analysis's findings as `Candidate`s on the one impact scale
(docs/analysis.md#one-impact-scale): what each could save in ms, and its cap.

Compute findings and fusion candidates carry their savings in % of the window already; here
they become ms, capped by the kernel time they cover. System findings are estimated here from
the time the GPU was idle or exposed, with the recovery fractions below (assumptions, stated
in the docs): the host can rarely hide every microsecond of a stall, and a copy or a collective
overlapped with compute still costs something.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from ...categories.any_metrics import Metrics
from ...categories.cpu_idle import CpuIdleMetrics
from ...categories.kernel_fusion import KernelFusionMetrics
from ...categories.models import CategoryMetrics, Finding
from ...categories.multi_kernel import MultiKernelMetrics
from ...layout import CPU_IDLE, KERNEL_FUSION, MULTI_KERNEL
from ...markdown_text import md_code
from ...perf.kernel_names import short_kernel_name
from ...prepare.categories import GpuUtilization
from .copy_item import copy_candidates
from .idle_advice import (
    CAUSE_RECOVERY,
    TITLES,
    idle_title,
    is_item,
)
from .impact_scale import (
    Candidate,
    Pool,
    PriorityItem,
    Saving,
    pool_sizes,
)
from .precision_item import precision_candidates
from .run_metrics import RunMetrics
from .unmodelled import reasons
from .unmodelled_group import gathered

# Share of an idle or exposed stretch a fix recovers: (low, mid, high). Per idle cause the
# fractions, titles and actions are idle_advice.py's.
RECOVERY = (0.25, 0.5, 0.75)
MIN_SYSTEM_SHARE = 1.0  # % of the window below which a system stretch is not a finding
KERNEL_LABEL = re.compile(r"^Kernel \d+: ")  # how operations[].kernel_name numbers its kernels


def candidates(
    metrics: Mapping[str, Metrics], gpu: GpuUtilization, display: Mapping[str, str]
) -> list[Candidate]:
    """The candidates of every analysis that ran; failed analyses give none."""
    found: list[Candidate] = []
    for key, analysed in metrics.items():
        if analysed.status not in ("OK", "SUCCESS"):
            continue
        if isinstance(analysed, CategoryMetrics):
            found.extend(_compute(key, analysed, gpu, display.get(key, key)))
        elif isinstance(analysed, KernelFusionMetrics):
            found.extend(_fusion(analysed, gpu))
        elif isinstance(analysed, CpuIdleMetrics):
            found.extend(_idle(analysed, gpu))
        elif isinstance(analysed, MultiKernelMetrics):
            found.extend(_copies(analysed, gpu))
            found.extend(_stretch(MULTI_KERNEL, "exposed_comm", gpu, "Exposed communication"))
    found.extend(precision_candidates(metrics, gpu))
    return gathered(found, metrics)  # no host side: the unmodelled kernels are one item


def _copies(metrics: MultiKernelMetrics, gpu: GpuUtilization) -> Iterator[Candidate]:
    """The one copy item: judged against the link when the copies were analysed, else a
    share of the exposed copy time."""
    if metrics.copies is not None:
        return copy_candidates(metrics.copies, gpu, MIN_SYSTEM_SHARE)
    return _stretch(MULTI_KERNEL, "exposed_memcpy", gpu, "Exposed copies")


def _ms(percent: float, gpu: GpuUtilization) -> float:
    return percent / 100 * gpu.total_time_ms


def _compute(
    key: str, metrics: CategoryMetrics, gpu: GpuUtilization, name: str
) -> Iterator[Candidate]:
    """Quantified findings keep their range; a heuristic one (its operations have no usable
    roofline) becomes an unquantified item that says why (docs/analysis.md#unquantified-items).
    """
    compared = metrics.comparison_scope == "comparative"
    for finding in metrics.category_findings or ():
        common = {
            "category": key,
            "kind": "compute",
            "title": _compute_title(name, finding, compared),
            "source_rank": finding.rank,
        }
        if finding.estimate_method != "quantified":
            names = {m.operation for m in finding.members}
            ops = [op for op in metrics.operations or () if op.name in names]
            yield Candidate(
                **common,
                estimate_method="unquantified",
                saving=None,
                unquantified_reason=reasons(ops),
                time_ms=sum(m.time_ms for m in finding.members),
            )
            continue
        yield Candidate(
            **common,
            estimate_method="quantified",
            saving=Saving(
                low_ms=_ms(finding.impact_score_low, gpu),
                mid_ms=_ms(finding.impact_score, gpu),
                high_ms=_ms(finding.impact_score_high, gpu),
                cap_ms=sum(m.time_ms for m in finding.members),
                pool="kernels",
                basis=COMPARED_BASIS if compared else ROOFLINE_BASIS,
            ),
        )


ROOFLINE_BASIS = "the members' kernel time brought to 75/87.5/100 % of their roofline"
COMPARED_BASIS = (  # docs/analysis.md#comparative-report: recoverable time in trace 1
    "the members' trace-1 kernel time brought to what trace 2 takes for the same work "
    "(never below their roofline)"
)


def _compute_title(name: str, finding: Finding, compared: bool = False) -> str:
    """`<category>: <the operation, or how many>[ slower than trace 2] (<bound or no
    roofline>[, <library>])`; the library is left out when unknown, as the card headings
    leave it (docs/analysis.md#findings-contract). The category and operation names are code
    spans (docs/analysis.md#trace-text-in-markdown)."""
    ops = sorted({m.operation for m in finding.members})
    what = (
        md_code(short_kernel_name(ops[0]))
        if len(ops) == 1
        else f"{finding.member_count} operations"
    )
    what += " slower than trace 2" if compared else ""
    modelled = finding.bound_type not in ("unknown", "unmodeled")
    bound = f"{finding.bound_type}-bound" if modelled else "no roofline"
    known = finding.library not in (None, "", "Unknown")
    return f"{md_code(name)}: {what} ({bound}{f', {finding.library}' if known else ''})"


FUSION_BASIS = "the candidate's kernels replaced by one fused kernel at its roofline"
FUSION_BASIS_COMPARED = (  # a comparative run: what trace 2 measured, no model
    "the time trace 1 spends under the operator beyond what trace 2 takes with fewer kernels, "
    "measured in the two traces (the high end is the whole gap)"
)
FUSION_BASIS_BY_TIME = (  # no platform known (docs/analysis.md#without-a-platform)
    "the candidate's kernels replaced by one fused kernel: a GEMM epilogue's kernels saved "
    "whole, a run of other kernels at the bandwidth it achieved (no platform, no roofline)"
)


def _fusion(metrics: KernelFusionMetrics, gpu: GpuUtilization) -> Iterator[Candidate]:
    """The estimate's saving share of its kernel time, applied to the time the instances
    really took (never the first instance times the count)."""
    how = FUSION_BASIS if metrics.platform else FUSION_BASIS_BY_TIME
    for rank, estimate in enumerate(metrics.impact_estimates or (), start=1):
        measured = estimate.measured_time_ms
        scale = measured / estimate.time_ms if measured is not None and estimate.time_ms else 1.0
        basis = FUSION_BASIS_COMPARED if estimate.estimation == "measured" else how
        if measured is not None:
            basis += (
                f", the first instance's saving share applied to the {measured:,.2f} ms its "
                f"instances took (not {estimate.time_ms:,.2f} ms, the first one times the count)"
            )
        yield Candidate(
            category=KERNEL_FUSION,
            kind="kernel_fusion",
            title=f"Fuse {md_code(estimate.operation)} ({estimate.kernel_count} kernels)",
            estimate_method="quantified",
            source_rank=rank,
            saving=Saving(
                low_ms=_ms(estimate.impact_score_low, gpu) * scale,
                mid_ms=_ms(estimate.impact_score, gpu) * scale,
                high_ms=_ms(estimate.impact_score_high, gpu) * scale,
                cap_ms=estimate.time_ms if measured is None else measured,
                pool="kernels",
                basis=basis,
            ),
        )


def _idle(metrics: CpuIdleMetrics, gpu: GpuUtilization) -> Iterator[Candidate]:
    """One finding per named idle cause when the host side is known, else one for all idle
    time. A cause is priced on the steady-state iterations when the window has them: idle in
    warm-up, set-up and the tail is a one-time cost, not a saving (docs/analysis.md#phases)."""
    if metrics.host_side is None:
        yield from _stretch(CPU_IDLE, "idle", gpu, "The GPU sat idle")
        return
    if not metrics.host_side.host_recorded:  # no claim about the host it did not record
        yield from _stretch(CPU_IDLE, "idle", gpu, TITLES["unexplained"])
        return
    sites = metrics.host_side.call_sites
    blocking_site = ""
    if sites:
        blocking_site = f"most in {md_code(sites[0].call, 80)}"
        if sites[0].operator:
            blocking_site += f" under {md_code(sites[0].operator, 80)}"
    for rank, part in enumerate(metrics.host_side.idle_causes, start=1):
        cause = part.cause
        if not is_item(cause, metrics.host_side.host_recorded):
            continue
        size = part.idle_ms if part.steady_ms is None else part.steady_ms
        yield from _stretch(
            CPU_IDLE,
            "idle",
            gpu,
            idle_title(cause, part, blocking_site),
            size=size,
            fractions=CAUSE_RECOVERY[cause],
            rank=rank,
        )


def _stretch(
    category: str,
    pool: Pool,
    gpu: GpuUtilization,
    title: str,
    *,
    size: float | None = None,
    fractions: tuple[float, float, float] = RECOVERY,
    rank: int | None = None,
) -> Iterator[Candidate]:
    """One system finding for a stretch of the window (by default a whole pool), worth a
    share of it."""
    size = pool_sizes(gpu)[pool] if size is None else size
    if gpu.total_time_ms <= 0 or size / gpu.total_time_ms * 100 < MIN_SYSTEM_SHARE:
        return
    low, mid, high = (size * f for f in fractions)
    share = size / gpu.total_time_ms * 100
    percents = "/".join(f"{f * 100:g}" for f in fractions)
    yield Candidate(
        category=category,
        kind="system",
        title=f"{title}: {size:.1f} ms ({share:.1f} % of the window)",
        estimate_method="quantified",
        source_rank=rank,
        saving=Saving(
            low_ms=low,
            mid_ms=mid,
            high_ms=high,
            cap_ms=size,
            pool=pool,
            basis=f"{percents} % of that time recovered by keeping the GPU fed or overlapped",
        ),
    )


def shared_kernels(metrics: Mapping[str, Metrics], items: list[PriorityItem]) -> dict[int, int]:
    """P-number -> the higher-ranked item whose kernels cover it, so the totals count that
    time once. In a comparative run a measured fusion item (an operator that runs as more
    kernels in trace 1) and a compute finding about the same operator claim the same gap: the
    fusion item's kernels all run in one of the finding's operations, or the finding's
    operations all run inside the fused operator (the unfused MoE operators of a `moe_layer`
    trace 2 runs as one kernel: each operator's share of the layer's gap is the fusion's)."""
    run = RunMetrics.of(metrics)
    if run.kernel_fusion is None:
        return {}
    estimates = run.kernel_fusion.impact_estimates or []
    ops_kernels = {item.p_number: _finding_kernels(run, item) for item in items
                   if item.kind == "compute" and item.saving is not None}  # fmt: skip
    out: dict[int, int] = {}
    for item in items:
        rank = item.source_rank or 0
        if item.kind != "kernel_fusion" or item.saving is None or not 0 < rank <= len(estimates):
            continue
        estimate = estimates[rank - 1]
        if estimate.estimation != "measured":
            continue
        wanted = set(estimate.affected_gpu_kernels)
        for p, kernel_sets in ops_kernels.items():
            inside = bool(kernel_sets) and all(k and k <= wanted for k in kernel_sets)
            if inside or any(wanted <= kernels for kernels in kernel_sets):
                first, second = sorted((p, item.p_number))
                out.setdefault(second, first)
    return out


def _finding_kernels(run: RunMetrics, item: PriorityItem) -> list[set[str]]:
    """The kernel names of each operation of the compute finding behind `item`."""
    if item.category not in run.compute:
        return []
    analysed = run.compute[item.category]
    finding = next((f for f in analysed.category_findings or () if f.rank == item.source_rank),
                   None)  # fmt: skip
    if finding is None:
        return []
    names = {m.operation for m in finding.members}
    return [
        {KERNEL_LABEL.sub("", k) for k in str(op.kernel_name or "").split("<br>")}
        for op in analysed.operations or ()
        if op.name in names
    ]
