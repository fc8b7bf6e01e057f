"""Unmodelled kernels of a trace without a host side, as one item and one table
(docs/analysis.md#unquantified-items).

A trace recorded with the GPU alone (`ProfilerActivity.CUDA`) names kernels, not operators:
each unmodelled operation is one demangled kernel with no shapes, so one P-item each would
bury the report in template names that say nothing more. They become one unquantified item
(`UNMODELLED_KEY`) whose card is a table: the short kernel name, its category, time, count and
share of the window.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...categories.any_metrics import Metrics
from ...categories.models import CategoryMetrics, Operation
from ...markdown_text import md_cell, md_code
from ...perf.kernel_names import short_kernel_name
from ..contract.contract import DetailBlock, PItem, Section, Table
from .impact_scale import Candidate, PriorityItem
from .run_metrics import RunMetrics
from .unmodelled import modelled, reason_md, reasons

UNMODELLED_KEY = "unmodelled_kernels"
MAX_ROWS = 30  # the longest kernels; the rest are one row
COLUMNS = ("Kernel", "Category", "Time (ms)", "Count", "% of window")
ACTION = (
    "Profile the largest of these kernels with hardware counters, or record the trace with "
    "its host side (`ProfilerActivity.CPU` and `record_shapes=True`) so their operators and "
    "shapes give them a roofline."
)


def host_unrecorded(metrics: Mapping[str, Metrics]) -> bool:
    """True when the trace records no host activity (cpu_idle's `host_side.host_recorded`)."""
    idle = RunMetrics.of(metrics).cpu_idle
    return idle is not None and idle.host_side is not None and not idle.host_side.host_recorded


def unmodelled_ops(metrics: Mapping[str, Metrics]) -> list[tuple[str, Operation]]:
    """(category, operation) of every compute operation without a usable roofline, longest
    first (those under the P-item threshold too: the table is the whole list)."""
    found = [
        (key, op)
        for key, analysed in metrics.items()
        if isinstance(analysed, CategoryMetrics) and analysed.status in ("OK", "SUCCESS")
        for op in analysed.operations or ()
        if not modelled(op)
    ]
    return sorted(found, key=lambda pair: -pair[1].time_ms)


def gathered(found: list[Candidate], metrics: Mapping[str, Metrics]) -> list[Candidate]:
    """`found` with its unquantified compute candidates replaced by one for every operation
    without a roofline, when the trace has no host side."""
    single = [c for c in found if c.kind == "compute" and c.estimate_method == "unquantified"]
    if not single or not host_unrecorded(metrics):
        return found
    ops = [op for _, op in unmodelled_ops(metrics)]
    time_ms = sum(op.time_ms for op in ops)
    top = md_code(short_kernel_name(ops[0].name)) if ops else "—"
    group = Candidate(
        category=UNMODELLED_KEY,
        kind="compute",
        title=f"{len(ops)} kernels without a roofline: {time_ms:.2f} ms, longest {top}",
        estimate_method="unquantified",
        saving=None,
        unquantified_reason=reasons(ops),
        time_ms=time_ms,
    )
    return [c for c in found if c not in single] + [group]


def unmodelled_pair(
    item: PriorityItem, metrics: Mapping[str, Metrics]
) -> tuple[PItem, DetailBlock]:
    """The group item's card and its Detailed Analysis block: one table of its kernels."""
    ops = unmodelled_ops(metrics)
    rows = [
        (
            md_cell(short_kernel_name(op.name)),
            md_cell(key),
            f"{op.time_ms:.3f}",
            str(op.count),
            "—" if op.percent_of_total is None else f"{op.percent_of_total:.2f}",
        )
        for key, op in ops[:MAX_ROWS]
    ]
    rest = [op for _, op in ops[MAX_ROWS:]]
    if rest:
        shares = [op.percent_of_total or 0.0 for op in rest]
        rows.append((f"{len(rest)} more", "—", f"{sum(op.time_ms for op in rest):.3f}",
                     str(sum(op.count for op in rest)), f"{sum(shares):.2f}"))  # fmt: skip
    table = Table(COLUMNS, tuple(rows)).render()
    why = reason_md(item.unquantified_reason or "")
    insight = (
        f"{len(ops)} kernels ({item.time_ms or 0:.2f} ms) have no roofline: {why}. The trace "
        "records the GPU alone, so no operator or shape stands behind them."
    )
    card = PItem(item.p_number, item.title, fields=(("Insight", insight), ("Action", ACTION)))
    ident = (
        "Every unmodelled kernel of the compute categories, longest first (source: each "
        "category's `category_findings` and `operations`; names shortened to the function and "
        "its operation and data type)."
    )
    sections = (
        Section("Identification", ident),
        Section("Data", body=table),
        Section("Resolution", ACTION),
    )
    return card, DetailBlock("compute", item.p_number, item.title, sections=sections)
