"""The shared pipeline every compute category runs (docs/analysis.md#compute-categories).

Pure functions over the rows of `category_data/<key>_ops.csv` (TraceLens headers; structured
cells are JSON text), read as `OpRow`s (op_row.py), and the category's metadata. Times are
in ms, scores in % of the end-to-end GPU time (`gpu_utilization.total_time_ms`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from ..perf.kernel_precision import LIBRARY_ORDER, kernel_library
from ..prepare.categories import COMPUTATION_TIME
from ..prepare.document_base import ComparisonScope
from ..prepare.manifest import CategoryMetadata
from ..report.cells import finite_number
from .comparative import comparative_efficiency, trace2_fields
from .impact import category_findings, impact_estimates
from .models import CategoryMetrics, Efficiency, Operation
from .op_row import CARRIED, KERNEL_SUM, OpRow, kernel_time_us, ranked_rows
from .precision_mix import simt_kernels

ANOMALY_PCT = 110.0
VARIANCE_MIN_COUNT, VARIANCE_MIN_PCT, VARIANCE_MAX_COV = 10, 5.0, 1.0
CALL_CHAIN_MAX_OPS = 100
KERNEL_NAME_CHARS = 75

BASE_FIELDS = ("Input Dims", "Input type")  # columns an operation carries (op_row.CARRIED)
DTYPES = {
    "float": "fp32",
    "double": "fp64",
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
}
NAME_LIBRARIES = (
    ("aiter::", "AITER"),
    ("rocm_aiter", "AITER"),
    ("fbgemm", "FBGEMM"),
    ("miopen", "MIOpen"),
    ("triton", "Triton"),
)
TORCH_INTERNALS = (
    "torch/nn/modules/module.py",
    "torch/utils/_device.py",
    "torch/overrides.py",
    "torch/_ops.py",
    "multiprocessing/spawn.py",
    "torch/_dynamo/eval_frame.py",
    "torch/_functorch/",
    "torch/autograd/function.py",
    "torch/_inductor/",
    "torch/cuda/graphs.py",
    "torch/utils/_contextlib.py",
)
MODULE_PREFIX = "nn.Module: "

Classifier = Callable[[OpRow], dict[str, Any] | None]


def round_or_none(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def baseline_ms(metadata: CategoryMetadata) -> float | None:
    """E2E GPU time in ms: `gpu_utilization.total_time_ms`."""
    return finite_number(metadata.gpu_utilization.total_time_ms)


def judged_window_ms(metadata: CategoryMetadata) -> float | None:
    """The judged window when a one-off part of the window is excluded, else None."""
    total, judged = metadata.gpu_utilization.total_time_ms, metadata.judged_window_ms
    return judged if judged is not None and 0 < judged < total else None


def share_of_window(kernel_ms: float, window_ms: float) -> float:
    """Kernel time in % of the window, at most 100: kernels running concurrently on several
    streams can add up to more than the window, which holds them all (docs/deviations.md)."""
    return min(100.0, kernel_ms / window_ms * 100)


def compute_ms(metadata: CategoryMetadata) -> float | None:
    """The timeline's computation time in ms (the denominator of `percent_of_compute`)."""
    util = metadata.gpu_utilization
    return finite_number(util.total_time_ms * util.computation_time_percent / 100) or None


def time_metrics(ops: pd.DataFrame, metadata: CategoryMetadata) -> dict[str, Any]:
    """`total_time_ms` (Σ kernel µs / 1000), `percent_of_compute` (the category's share of
    computation time), `percent_of_total` (its kernel time in % of E2E, TraceLens's
    `percent_of_compute`) and op count (docs/analysis.md#operations)."""
    total_ms = _column_ms(ops[KERNEL_SUM])
    category_ms = _column_ms(ops[COMPUTATION_TIME]) if COMPUTATION_TIME in ops else total_ms
    if "operation_count" in ops:
        count = int(pd.to_numeric(ops["operation_count"], errors="coerce").fillna(0).sum())
    else:
        count = len(ops)
    baseline, compute = baseline_ms(metadata), compute_ms(metadata)
    return {
        "total_time_ms": round(total_ms, 3),
        "percent_of_compute": round(category_ms / compute * 100, 2) if compute else None,
        "percent_of_total": round(share_of_window(total_ms, baseline), 2) if baseline else 0.0,
        "operation_count": count,
    }


def _column_ms(column: pd.Series) -> float:
    return float(pd.to_numeric(column, errors="coerce").sum()) / 1000


def format_args(dims: Any, types: Any) -> str | None:
    """`(d1,d2) dtype` per input joined by `<br>`; empty-shape blank or Scalar slots dropped."""
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    parts = []
    for shape, dtype in zip(dims, types, strict=False):
        shape = shape if isinstance(shape, list) else []
        if not shape and dtype in ("", "Scalar", None):
            continue
        body = ",".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
        name = DTYPES.get(dtype, dtype) if isinstance(dtype, str) else str(dtype)
        parts.append(f"({body}) {name}")
    return "<br>".join(parts)


def classify_library(op_name: str, kernels: Iterable[str]) -> str | None:
    """Op-name rules (case-insensitive) first, then each kernel's own library from its
    vendor (kernel_precision.kernel_library: no AMD library on an NVIDIA kernel), the first
    of LIBRARY_ORDER any kernel reads as."""
    lowered = op_name.lower()
    for needle, library in NAME_LIBRARIES:
        if needle in lowered:
            return library
    found = {kernel_library(k) for k in kernels}
    return next((library for library in LIBRARY_ORDER if library in found), None)


def launcher_path(entry_point: Any, modules: list[str], library: str | None) -> str:
    """The entry point; else the first three modules; else `<library> (vendor)`."""
    if isinstance(entry_point, str) and entry_point and entry_point != "Not found":
        return entry_point
    if modules:
        return " > ".join(modules[:3])
    return f"{library} (vendor)" if library else "Not found"


def kernel_name(stack: Any) -> tuple[str | None, str | None]:
    """Full and truncated kernel name from a parsed `call_stack_full`."""
    if not isinstance(stack, list) or not stack:
        return None, None
    if any(isinstance(frame, list) for frame in stack):
        names = [str(sub[-1]) for sub in stack if isinstance(sub, list) and sub]
        full = "<br>".join(f"Kernel {i}: {n}" for i, n in enumerate(names, 1))
        trunc = "<br>".join(f"Kernel {i}: {_clip(n)}" for i, n in enumerate(names, 1))
        return full, trunc
    names = [frame for frame in stack if isinstance(frame, str)]
    return (names[-1], _clip(names[-1])) if names else (None, None)


def _clip(name: str) -> str:
    return name if len(name) <= KERNEL_NAME_CHARS else name[:KERNEL_NAME_CHARS] + "..."


def _frames(stack: Any) -> list[str]:
    if not isinstance(stack, list):
        return []
    flat: list[str] = []
    for frame in stack:
        flat.extend(
            f for f in (frame if isinstance(frame, list) else [frame]) if isinstance(f, str)
        )
    return flat


def module_chain(stack: Any) -> list[str]:
    return [f.removeprefix(MODULE_PREFIX) for f in _frames(stack) if f.startswith(MODULE_PREFIX)]


def call_chain(stack: Any) -> list[str]:
    """Model-code frames: modules, `.py` frames and `::` ops, without torch internals."""
    return [
        f
        for f in _frames(stack)
        if (f.startswith(MODULE_PREFIX) or ".py" in f or "::" in f)
        and not any(internal in f for internal in TORCH_INTERNALS)
    ]


def fusion_candidate(kernels: Iterable[str], fusion_map: Mapping[str, str]) -> str | None:
    """The first kernel with an exact key, else a prefix match either way."""
    for kernel in kernels:
        if kernel in fusion_map:
            return fusion_map[kernel]
        for key, candidate in fusion_map.items():
            if kernel.startswith(key) or key.startswith(kernel):
                return candidate
    return None


def efficiency(row: OpRow, metadata: CategoryMetadata) -> Efficiency:
    """Standalone efficiency: `Pct Roofline_mean`, anomalous above 110 %.

    A row groups instances with one signature; when some of them exceed the roof while the
    mean does not (`Pct Roofline_max`), the model misses something that differs between
    them (vLLM attention layers with and without a sliding window share one signature), so
    the row is anomalous too."""
    roofs, spec = metadata.max_achievable_tflops, row.compute_spec
    peak = roofs[spec] if spec in roofs else matrix_peak(metadata)
    pct, pct_max = row.pct_roofline_mean, row.pct_roofline_max
    warning = None
    if pct is not None and pct > ANOMALY_PCT:
        warning = (
            f"[ANOMALY] Pct Roofline exceeds 110% ({pct:.1f}%): the perf model or the timing "
            "is suspect, so no quantified estimate is made"
        )
    elif pct is not None and pct_max is not None and pct_max > ANOMALY_PCT:
        warning = (
            f"[ANOMALY] some instances exceed 110% of the roofline (max {pct_max:.1f}%, mean "
            f"{pct:.1f}%): the perf model misses something that differs between instances "
            "with this signature, so no quantified estimate is made"
        )
    anomaly = warning is not None
    return Efficiency(
        tflops_achieved=round_or_none(row.tflops_mean, 2),
        tb_s_achieved=round_or_none(row.tb_s_mean, 2),
        efficiency_percent=round_or_none(pct, 2),
        bound_type=row.bound,
        flops_per_byte=round_or_none(row.flops_per_byte or None, 2),
        compute_spec=spec,
        resolved_peak_maf=peak,
        resolved_peak_hbm_bw=metadata.peak_hbm_bw_tbs,
        warning=warning,
        is_anomaly=anomaly,
    )


def build_operations(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    *,
    extra_fields: tuple[str, ...] = BASE_FIELDS,
    classify: Classifier | None = None,
    fusion_map: Mapping[str, str] | None = None,
    comparative: bool = False,
) -> tuple[Operation, ...]:
    """One entry per row (docs/analysis.md#operations), longest kernel time first;
    `comparative`: scored against trace 2 (categories/comparative.py)."""
    baseline = baseline_ms(metadata)
    category_us = float(kernel_time_us(ops).sum())
    rows = ranked_rows(ops)
    with_chain = len(rows) <= CALL_CHAIN_MAX_OPS
    return tuple(
        _operation(
            row,
            metadata,
            baseline,
            category_us,
            extra_fields,
            classify,
            fusion_map or {},
            with_chain,
            comparative,
        )
        for row in rows
    )


def _operation(
    row: OpRow,
    metadata: CategoryMetadata,
    baseline: float | None,
    category_us: float,
    extra_fields: tuple[str, ...],
    classify: Classifier | None,
    fusion_map: Mapping[str, str],
    with_chain: bool,
    comparative: bool = False,
) -> Operation:
    """One `operations[]` entry: time shares, efficiency, then the optional keys that apply."""
    name = str(row.name)  # a blank name reads "None"
    time_us = row.kernel_time_us or 0.0
    time_ms = time_us / 1000
    count = row.count if row.count is not None else row.operation_count
    pct_total = share_of_window(time_ms, baseline) if baseline else None
    eff = efficiency(row, metadata)
    if comparative:
        eff = comparative_efficiency(row, eff)
    fields: dict[str, Any] = {
        "name": name,
        "count": int(count) if count is not None else 1,
        "time_ms": round(time_ms, 3),
        "percent_of_category": round(time_us / category_us * 100, 2) if category_us else 0.0,
        "percent_of_total": round_or_none(pct_total, 2),
        "efficiency": eff,
    }
    if eff.warning:
        fields["efficiency_warning"] = eff.warning
    if row.unmodelled_reason:  # the perf report's column (docs/perf-models.md)
        fields["unmodelled_reason"] = row.unmodelled_reason
    fields |= _row_fields(row, extra_fields)
    if comparative:
        fields |= trace2_fields(row)
    fields |= _variance(row, fields["count"], pct_total)
    if classify is not None and (classification := classify(row)) is not None:
        fields["classification"] = classification
    fields |= _source_fields(row, name, fusion_map, with_chain)
    return Operation.model_validate(fields)


def _row_fields(row: OpRow, extra_fields: tuple[str, ...]) -> dict[str, Any]:
    """The category's extra columns as they stand in the row (JSON cells parsed), and `args`."""
    fields: dict[str, Any] = {}
    for field in extra_fields:
        value = CARRIED[field](row)
        if value is not None:
            fields[field] = value.item() if hasattr(value, "item") else value
    args = format_args(row.input_dims, row.input_types)
    if args is not None:
        fields["args"] = args
    return fields


def _variance(row: OpRow, count: int, pct_total: float | None) -> dict[str, Any]:
    """`cov` and `high_variance`, only for ops run often enough and heavy enough to matter."""
    mean, std = row.kernel_time_mean_us, row.kernel_time_std_us
    if (
        count > VARIANCE_MIN_COUNT
        and pct_total is not None
        and pct_total >= VARIANCE_MIN_PCT
        and mean
        and mean > 0
    ):
        cov = (std or 0.0) / mean
        return {"cov": round(cov, 3), "high_variance": cov > VARIANCE_MAX_COV}
    return {}


def _source_fields(
    row: OpRow, name: str, fusion_map: Mapping[str, str], with_chain: bool
) -> dict[str, Any]:
    """Where the op's time comes from: library, fusion flag, launcher, kernel and modules."""
    kernels = row.kernel_names
    library = classify_library(name, kernels)
    fields: dict[str, Any] = {"library": library}
    candidate = fusion_candidate(kernels, fusion_map)
    if candidate is not None:
        fields |= {"fusion_flagged": True, "fusion_candidate_name": candidate}
    stack = row.call_stack
    modules = module_chain(stack)
    full, trunc = kernel_name(stack)
    fields["launcher_path"] = launcher_path(row.entry_point, modules, library)
    fields |= {"kernel_name": full, "kernel_name_trunc": trunc, "module_chain": modules}
    if with_chain:
        fields["call_chain"] = call_chain(stack)
    return fields


def matrix_peak(metadata: CategoryMetadata) -> float | None:
    """The platform's bf16 matrix roof in TFLOPS, the default peak; None without one."""
    return metadata.max_achievable_tflops.get("matrix_bf16")  # the platform file's keys


def peaks(metadata: CategoryMetadata) -> dict[str, Any]:
    """`peak_maf_tflops` (matrix_bf16) and `peak_hbm_bw_tbs` for `category_specific`."""
    return {"peak_maf_tflops": matrix_peak(metadata), "peak_hbm_bw_tbs": metadata.peak_hbm_bw_tbs}


def score(
    ops: pd.DataFrame,
    metadata: CategoryMetadata,
    category: str,
    *,
    extra_fields: tuple[str, ...] = BASE_FIELDS,
    classify: Classifier | None = None,
    fusion_map: Mapping[str, str] | None = None,
    specific: Mapping[str, Any] | None = None,
    scope: ComparisonScope = "standalone",
) -> CategoryMetrics:
    """Time metrics, operations, estimates and findings of one category."""
    baseline = baseline_ms(metadata)
    comparative = scope == "comparative"
    operations = build_operations(
        ops,
        metadata,
        extra_fields=extra_fields,
        classify=classify,
        fusion_map=fusion_map,
        comparative=comparative,
    )
    estimates = impact_estimates(operations, category, baseline, comparative=comparative)
    return CategoryMetrics(
        category=category,
        status="OK",
        comparison_scope=scope,
        **time_metrics(ops, metadata),
        operations=operations,
        category_specific=dict(specific or {}),
        impact_estimates=estimates,
        category_findings=category_findings(
            estimates, comparative=comparative, judged_ms=judged_window_ms(metadata)
        ),
        simt_kernels=simt_kernels(ops, operations) or None,
    )
