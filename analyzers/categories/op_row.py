"""One row of a category's table (the unified perf summary's columns, TraceLens headers) as a
typed object: built once per row from the DataFrame's columns, every blank or NaN cell read
as None, every structured cell parsed (docs/report-tables.md).

The compute analyses (scoring and the category modules) read rows only through `OpRow`; a
column the table lacks reads as blank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

import pandas as pd

from ..compare.compare_columns import DELTA, SPEEDUP
from ..report.cells import finite_number, structured

KERNEL_SUM = "Kernel Time (µs)_sum"
Bound = Literal["compute", "memory"]


@dataclass(frozen=True, slots=True)
class KernelDetail:
    """One entry of a row's `kernel_details_summary` (the kernels its op launched)."""

    name: str
    count: float | None
    total_us: float | None
    mean_us: float | None


@dataclass(frozen=True, slots=True)
class OpRow:
    """A table row; numbers are finite floats or None, text is non-blank or None, and a
    structured cell is parsed when read (as often as the analyses read it, no more)."""

    name: str | None
    kernel_time_us: float | None  # Kernel Time (µs)_sum
    kernel_time_mean_us: float | None
    kernel_time_std_us: float | None
    count: float | None  # instances of the signature (`count`)
    operation_count: float | None
    pct_roofline_mean: float | None
    pct_roofline_max: float | None
    compute_spec: str | None
    bound: Bound | None  # Roofline Bound
    tflops_mean: float | None  # TFLOPS/s_mean
    tb_s_mean: float | None  # TB/s_mean
    flops_per_byte_cell: Any  # FLOPS/Byte as it stands (an operation carries it unchanged)
    unmodelled_reason: str | None
    entry_point: str | None
    has_perf_model: Any  # as it stands
    # Structured cells (JSON text or objects) as they stand, parsed where read:
    input_dims_cell: Any
    input_types_cell: Any  # Input type
    perf_params_cell: Any
    kernel_details_cell: Any  # kernel_details_summary
    call_stack_cell: Any  # call_stack_full
    delta_us: float | None  # comparison columns (docs/compare.md), None outside a comparison
    speedup: float | None
    trace2_kernel_time_us: float | None  # lca_total_kernel_time_trace2_us
    count_trace2: float | None  # lca_count_trace2

    @property
    def flops_per_byte(self) -> float | None:
        return finite_number(self.flops_per_byte_cell)

    @property
    def input_dims(self) -> Any:
        return structured(self.input_dims_cell)

    @property
    def input_types(self) -> Any:
        return structured(self.input_types_cell)

    @property
    def perf_params(self) -> Any:
        return structured(self.perf_params_cell)

    @property
    def kernel_details(self) -> Any:
        """`kernel_details_summary` parsed, as an operation carries it."""
        return structured(self.kernel_details_cell)

    @property
    def kernels(self) -> tuple[KernelDetail, ...] | None:
        """The named kernels of `kernel_details_summary`; None when it is not a list."""
        return kernel_details(self.kernel_details)

    @property
    def kernel_names(self) -> list[str]:
        return [k.name for k in self.kernels or ()]

    @property
    def call_stack(self) -> Any:
        return structured(self.call_stack_cell)


COLUMNS = (
    "name",
    KERNEL_SUM,
    "Kernel Time (µs)_mean",
    "Kernel Time (µs)_std",
    "count",
    "operation_count",
    "Pct Roofline_mean",
    "Pct Roofline_max",
    "Compute Spec",
    "Roofline Bound",
    "TFLOPS/s_mean",
    "TB/s_mean",
    "FLOPS/Byte",
    "unmodelled_reason",
    "entry_point",
    "has_perf_model",
    "Input Dims",
    "Input type",
    "perf_params",
    "kernel_details_summary",
    "call_stack_full",
    DELTA,
    SPEEDUP,
    "lca_total_kernel_time_trace2_us",
    "lca_count_trace2",
)

# The optional columns an operation carries under their own headers (scoring's extra fields).
CARRIED = {
    "Input Dims": attrgetter("input_dims"),
    "Input type": attrgetter("input_types"),
    "FLOPS/Byte": attrgetter("flops_per_byte_cell"),
    "has_perf_model": attrgetter("has_perf_model"),
    "perf_params": attrgetter("perf_params"),
    "kernel_details_summary": attrgetter("kernel_details"),
}


def op_rows(ops: pd.DataFrame) -> list[OpRow]:
    """Every row of `ops`, in its order."""
    cells = ops.reindex(columns=list(COLUMNS)).itertuples(index=False, name=None)
    return [_row(*c) for c in cells]


def _row(
    name: Any,
    kernel_sum: Any,
    kernel_mean: Any,
    kernel_std: Any,
    count: Any,
    operation_count: Any,
    pct_mean: Any,
    pct_max: Any,
    spec: Any,
    bound: Any,
    tflops: Any,
    tb_s: Any,
    flops_per_byte: Any,
    reason: Any,
    entry_point: Any,
    has_perf_model: Any,
    dims: Any,
    types: Any,
    perf_params: Any,
    details: Any,
    stack: Any,
    delta: Any,
    speedup: Any,
    t2_us: Any,
    count2: Any,
) -> OpRow:
    return OpRow(
        name=None if _blank(name) else str(name),
        kernel_time_us=finite_number(kernel_sum),
        kernel_time_mean_us=finite_number(kernel_mean),
        kernel_time_std_us=finite_number(kernel_std),
        count=finite_number(count),
        operation_count=finite_number(operation_count),
        pct_roofline_mean=finite_number(pct_mean),
        pct_roofline_max=finite_number(pct_max),
        compute_spec=text(spec),
        bound=_bound(bound),
        tflops_mean=finite_number(tflops),
        tb_s_mean=finite_number(tb_s),
        flops_per_byte_cell=None if _nan(flops_per_byte) else flops_per_byte,
        unmodelled_reason=text(reason),
        entry_point=text(entry_point),
        has_perf_model=None if _nan(has_perf_model) else has_perf_model,
        input_dims_cell=dims,
        input_types_cell=types,
        perf_params_cell=perf_params,
        kernel_details_cell=details,
        call_stack_cell=stack,
        delta_us=finite_number(delta),
        speedup=finite_number(speedup),
        trace2_kernel_time_us=finite_number(t2_us),
        count_trace2=finite_number(count2),
    )


def kernel_details(details: Any) -> tuple[KernelDetail, ...] | None:
    """The named entries of a parsed `kernel_details_summary`; None when it is not a list."""
    if not isinstance(details, list):
        return None
    return tuple(
        KernelDetail(
            name=str(d["name"]),
            count=finite_number(d.get("count")),
            total_us=finite_number(d.get("total_duration_us")),
            mean_us=finite_number(d.get("mean_duration_us")),
        )
        for d in details
        if isinstance(d, dict) and d.get("name")  # the cell's JSON: any key may be missing
    )


def text(value: Any) -> str | None:
    """A text cell, None when blank."""
    return value if isinstance(value, str) and value else None


def _nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _blank(value: Any) -> bool:
    return value is None or _nan(value)


def _bound(value: Any) -> Bound | None:
    match value:
        case "COMPUTE_BOUND":
            return "compute"
        case "MEMORY_BOUND":
            return "memory"
    return None


def kernel_time_us(ops: pd.DataFrame) -> pd.Series:
    """Each row's kernel time in µs, blank as 0."""
    return pd.to_numeric(ops[KERNEL_SUM], errors="coerce").fillna(0.0)


def ranked_rows(ops: pd.DataFrame) -> list[OpRow]:
    """The rows, longest kernel time first (ties in table order)."""
    order = kernel_time_us(ops).sort_values(ascending=False, kind="stable").index
    return op_rows(ops.loc[order])


def op_names(ops: pd.DataFrame) -> list[str]:
    """Each row's name as text; none when the table has no `name` column."""
    return [str(n) for n in ops["name"]] if "name" in ops else []
