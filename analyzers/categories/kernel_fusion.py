"""`kernel_fusion_metrics.json`: what fusing each candidate could save.

See docs/analysis.md#kernel-fusion.

Standalone estimate only. Inputs: `category_data/fusion_candidates.json`, the manifest (its
`gpu_utilization.total_time_ms` is the baseline), `perf_report_csvs/unified_perf_summary.csv`
(per-kernel Data Moved / GFLOPS / Compute Spec) and the arch peaks of the first
`metadata/*_metadata.json` that has them (else the manifest platform's catalogue entry).

A candidate is split at each matrix op: a GEMM with trailing non-matrix kernels saves those
kernels' time (epilogue fusion); a leading run of non-matrix kernels saves what a roofline
projection of one fused kernel says (with no platform known: one kernel moving the run's
input and output at the bandwidth the run's kernels achieved, so by measured time only); a
lone GEMM saves nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple

import pandas as pd
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from ..layout import KERNEL_FUSION
from ..perf.platforms import Platform
from ..prepare.document_base import OmitNone
from ..prepare.fusion import FusionCandidate
from ..report.cells import finite_number, structured
from .models import MetricsStatus
from .op_row import kernel_details
from .system_inputs import SystemInputs

CATEGORY = KERNEL_FUSION
MAX_FUSION_KERNEL_COUNT = 15
MIN_IMPACT_SCORE = 2.0  # % of E2E, on the high estimate
OVERLAP_EFFICIENCY = 0.85
MIN_SAVINGS_MS = 0.1
LOW_FACTOR, MID_FACTOR = 0.75, 0.875
DEFAULT_PLATFORM = "MI300X"
MATRIX_SPECS = frozenset(f"matrix_{t}" for t in ("fp16", "bf16", "fp32", "fp64", "fp8", "int8"))
NORM_TYPES = frozenset({"LayerNorm", "BatchNorm", "GroupNorm", "InstanceNorm", "Norm"})
NORM_TYPES |= {"Normalization"}  # our table's single norm type (kernel_types.py)
NORM_NAMES = ("batchnorm", "layernorm", "groupnorm", "instancenorm", "miopenbatchnorm", "rmsnorm")
NAME_HINTS = {
    "attention": ("attention", "sdpa", "self_attn"),
    "norm": ("rmsnorm", "rms_norm", "layernorm", "layer_norm", "batchnorm", "batch_norm"),
    "mlp": ("mlp",),
    "rope": ("rotary", "rope", "apply_rotary"),
    "siglu": ("silu", "swiglu"),
}
NO_PLATFORM_WARNING = (
    "no platform known: a run of non-matrix kernels is projected as one kernel moving its "
    "input and output at the bandwidth those kernels achieved, not against a roofline"
)
UNMODELLED_WARNING = (
    "{k} of {n} kernels lack perf models; savings estimate uses trace time for unmodeled kernels"
)


class FusionEstimate(OmitNone):
    operation: str
    category: str = CATEGORY
    type: str = CATEGORY
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    estimation: Literal["full", "partial", "measured"]  # measured: comparative
    bound_type: Literal["compute", "memory"]
    time_ms: float
    instance_count: int
    kernel_count: int
    modeled_kernel_count: int
    delta_kernel_count: int | None = None  # comparative: trace 1's extra kernels
    confidence: Literal["high", "medium", "low"]
    affected_gpu_kernels: list[str]
    fusion_type: Literal["matrix_compute", "memory_bound"]
    warning: str | None = None
    # the kernel time the instances really took, when `time_ms` (the first instance times the
    # count, as TraceLens reckons it) claims more; the impact scale scales to it and caps by it
    measured_time_ms: float | None = None


class KernelFusionMetrics(OmitNone):
    category: str = CATEGORY
    status: MetricsStatus
    error: str | None = None
    total_time_ms: float | None = None
    candidate_count: int | None = None
    estimated_count: int | None = None
    total_impact_score: float | None = None
    platform: str | None = None
    peak_hbm_bw_tbs: float | None = None
    impact_estimates: list[FusionEstimate] | None = None
    warnings: list[str] | None = None
    high_confidence_kernel_map: dict[str, str] | None = None


class Peaks(BaseModel):
    hbm_tbs: float | None  # None: no platform known (measured bandwidth instead)
    matrix_tflops: float | None
    vector_tflops: float | None


def _shape(dims: Any) -> str | None:
    dims = structured(dims) if isinstance(dims, str) else dims
    if isinstance(dims, list | tuple) and dims:
        return json.dumps(dims[0], separators=(",", ":"))
    return None


class PerfFacts(NamedTuple):
    """What the perf report knows of one kernel's work."""

    data_moved_mb: float | None
    gflops: float | None
    compute_spec: Any  # the row's Compute Spec cell (text, or blank)


LOOKUP_COLUMNS = ("kernel_details_summary", "Data Moved (MB)", "GFLOPS", "Compute Spec")


class PerfLookup:
    """kernel name -> {first input shape -> perf facts}; first row per (kernel, shape) wins."""

    def __init__(self, summary: pd.DataFrame) -> None:
        self.table: dict[str, dict[str | None, PerfFacts]] = {}
        columns = summary.reindex(columns=[*LOOKUP_COLUMNS, "Input Dims"])  # missing: blank
        for details, moved, gflops, spec, dims in columns.itertuples(index=False, name=None):
            kernels = kernel_details(structured(details))
            if kernels is None:
                continue
            facts = PerfFacts(finite_number(moved), finite_number(gflops), spec)
            shape = _shape(dims)
            for kernel in kernels:
                self.table.setdefault(kernel.name, {}).setdefault(shape, facts)

    def facts(self, name: str, shape: str | None) -> PerfFacts | None:
        shapes = self.table.get(name)
        if shapes is None:
            shapes = next(
                (v for k, v in self.table.items() if k.startswith(name) or name.startswith(k)),
                None,
            )
        if not shapes:
            return None
        return shapes.get(shape) or next(iter(shapes.values()))


class ChainKernel(BaseModel):
    """One kernel of a candidate's chain: an entry of `fusion_candidates.json` `kernels`,
    which the module pass writes with `name`/`type` and the sibling pass with
    `kernel_name`/`kernel_type`. A key the entry lacks takes the default."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    name: str = Field("", validation_alias=AliasChoices("name", "kernel_name"))
    type: str = Field("Unknown", validation_alias=AliasChoices("type", "kernel_type"))
    dur_us: float = 0.0
    data_in_mb: float | None = None
    data_out_mb: float | None = None

    @field_validator("name", "type", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return str(value)

    @field_validator("dur_us", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        return float(value or 0.0)

    @field_validator("data_in_mb", "data_out_mb", mode="before")
    @classmethod
    def _megabytes(cls, value: Any) -> float | None:
        return finite_number(value)


def _is_norm(kernel: ChainKernel) -> bool:
    low = kernel.name.lower()
    return kernel.type in NORM_TYPES or any(n in low for n in NORM_NAMES)


def classify_confidence(name: str, names: list[str], is_matrix: list[bool]) -> str:
    """Both a name hint and a composition signal -> high; one -> medium; none -> low."""
    low = name.lower()
    by_name = any(h in low for hints in NAME_HINTS.values() for h in hints)
    lows = [n.lower() for n in names]
    matrix = sum(is_matrix)
    composition = (
        (matrix >= 2 and any("softmax" in n for n in lows))
        or any("rsqrt" in n for n in lows)
        or (matrix >= 2 and len(names) - matrix >= 1)
        or (any("neg" in n for n in lows) and any("catarray" in n or "cat_" in n for n in lows))
        or (matrix == 0 and len(names) >= 3)
    )
    return "high" if by_name and composition else "medium" if by_name or composition else "low"


def prefilter(candidates: Sequence[FusionCandidate], baseline_ms: float) -> list[FusionCandidate]:
    """<= 15 kernels, >= 2 % of E2E at full recovery, one per (instances, kernels, time)."""
    floor_us = baseline_ms * 10 * MIN_IMPACT_SCORE
    kept: dict[tuple, FusionCandidate] = {}
    for c in candidates:
        total = float(c.total_kernel_time_us or 0.0)
        if int(c.kernel_count or 0) > MAX_FUSION_KERNEL_COUNT or total < floor_us:
            continue
        key = (c.instance_count, c.kernel_count, round(total, 1))
        held = kept.get(key)
        if held is None or len(str(c.module_name)) < len(str(held.module_name)):
            kept[key] = c
    return list(kept.values())


def _elementwise_savings(group: list[tuple], peaks: Peaks) -> float:
    """Roofline projection of one fused kernel for a run of non-matrix kernels."""
    modelled = [(k, f) for k, f, _ in group if f is not None]
    if not modelled:
        return 0.0
    first, first_facts = modelled[0]
    last, last_facts = modelled[-1]
    data_in, data_out = first.data_in_mb, last.data_out_mb
    data_in = first_facts.data_moved_mb / 2 if data_in is None else data_in
    data_out = last_facts.data_moved_mb / 2 if data_out is None else data_out
    if peaks.hbm_tbs is None:  # no platform: the bandwidth the group's kernels achieved
        moved_mb = sum(f.data_moved_mb for _, f in modelled)
        spent_us = sum(k.dur_us for k, _ in modelled)
        if moved_mb <= 0 or spent_us <= 0:
            return 0.0
        mem_us = (data_in + data_out) / (moved_mb / spent_us)
    else:
        mem_us = (data_in + data_out) * 1e6 / (peaks.hbm_tbs * 1e12) * 1e6
    gflops = sum(f.gflops or 0.0 for _, f in modelled)
    vector_us = gflops * 1e9 / (peaks.vector_tflops * 1e12) * 1e6 if peaks.vector_tflops else 0.0
    parts = (mem_us, 0.0, vector_us)
    fused_us = max(parts) + (1 - OVERLAP_EFFICIENCY) * (sum(parts) - max(parts))
    current = sum(k.dur_us for k, _, _ in group)
    unmodelled = sum(k.dur_us for k, f, _ in group if f is None)
    return max(0.0, current - fused_us - unmodelled)


def _fusion_savings(
    kernels: list[ChainKernel], facts: list, is_matrix: list[bool], peaks: Peaks
) -> tuple[float, bool]:
    """Savings per instance (µs) and whether any come from a matrix kernel's epilogue.

    Each matrix kernel starts a group that absorbs the non-matrix kernels after it (a GEMM
    epilogue: their whole time is saved); non-matrix kernels before the first matrix kernel
    form an elementwise prefix, projected onto the roofline as one fused kernel.
    """
    groups: list[list[tuple]] = []
    for item in zip(kernels, facts, is_matrix, strict=True):
        if item[2] or not groups:
            groups.append([item])
        else:
            groups[-1].append(item)
    savings, compute = 0.0, False
    for group in groups:
        if group[0][2] and len(group) > 1:  # gemm_epilogue
            compute = True
            savings += sum(k.dur_us for k, _, _ in group[1:])
        elif not group[0][2]:  # elementwise prefix
            savings += _elementwise_savings(group, peaks)
    return savings, compute


def estimate(
    c: FusionCandidate, lookup: PerfLookup, peaks: Peaks, baseline_ms: float
) -> FusionEstimate | None:
    """The standalone estimate of one candidate, or None when a gate rejects it."""
    kernels = [ChainKernel.model_validate(k) for k in c.kernels or []]
    names = [k.name for k in kernels]
    if len(kernels) < 2 or c.has_fused_kernel or any(n.startswith("triton_") for n in names):
        return None
    shape = _shape(c.input_dims)
    facts = [lookup.facts(n, shape) for n in names]
    facts = [f if f and f.data_moved_mb is not None else None for f in facts]
    is_matrix = [
        bool(f and f.compute_spec in MATRIX_SPECS)
        or any(t in k.type.upper() for t in ("GEMM", "CONV"))
        for k, f in zip(kernels, facts, strict=True)
    ]
    modelled = sum(f is not None for f in facts)
    others = [k for k, m in zip(kernels, is_matrix, strict=True) if not m]
    if not modelled or not others or (any(is_matrix) and all(_is_norm(k) for k in others)):
        return None
    if modelled / len(kernels) < (0.5 if len(kernels) < 5 else 0.75):
        return None
    savings, compute = _fusion_savings(kernels, facts, is_matrix, peaks)
    current = sum(k.dur_us for k in kernels)
    instances = int(c.instance_count or 1)
    if current <= 0 or savings * instances / 1000 < MIN_SAVINGS_MS:
        return None
    time_ms = current * instances / 1000
    measured = _measured_ms(c, time_ms)
    high = savings / current * time_ms / baseline_ms * 100
    if high < MIN_IMPACT_SCORE:
        return None
    missing = len(kernels) - modelled
    notes = [UNMODELLED_WARNING.format(k=missing, n=len(kernels))] if missing else []
    if peaks.hbm_tbs is None and not is_matrix[0]:  # a non-matrix run was projected
        notes.append(NO_PLATFORM_WARNING)
    return FusionEstimate(
        operation=str(c.base_name),
        impact_score=round(high * MID_FACTOR, 2),
        impact_score_low=round(high * LOW_FACTOR, 2),
        impact_score_high=round(high, 2),
        estimation="partial" if missing else "full",
        bound_type="compute" if compute else "memory",
        time_ms=round(time_ms, 3),
        instance_count=instances,
        kernel_count=len(kernels),
        modeled_kernel_count=modelled,
        confidence=classify_confidence(f"{c.base_name} {c.module_name}", names, is_matrix),
        affected_gpu_kernels=names,
        fusion_type="matrix_compute" if any(is_matrix) else "memory_bound",
        warning="; ".join(notes) or None,
        measured_time_ms=measured,
    )


def _measured_ms(c: FusionCandidate, time_ms: float) -> float | None:
    """The instances' real kernel time when it is below the first-instance extrapolation
    (the first instance is often the largest: the stem's BatchNorm, the vision encoder's
    attention), else None."""
    measured = c.measured_kernel_time_us
    if measured is None or measured / 1000 >= time_ms:
        return None
    return round(float(measured) / 1000, 3)


def _peaks(platform: Platform | None) -> Peaks:
    if platform is None:
        return Peaks(hbm_tbs=None, matrix_tflops=None, vector_tflops=None)
    return Peaks(
        hbm_tbs=platform.mem_bw() / 1000.0,
        matrix_tflops=platform.roof_tflops("matrix_bf16"),
        vector_tflops=platform.roof_tflops("vector_bf16"),
    )


def high_confidence_map(estimates: list[FusionEstimate]) -> dict[str, str]:
    """Kernel -> the fusion candidate that covers it, for the high-confidence estimates only:
    the compute categories flag those kernels' operations (fusion runs first)."""
    return {
        k: e.operation for e in estimates if e.confidence == "high" for k in e.affected_gpu_kernels
    }


def error(message: str) -> KernelFusionMetrics:
    return KernelFusionMetrics(status="ERROR", error=message)


def analyze_kernel_fusion(inputs: SystemInputs) -> KernelFusionMetrics:
    """The kernel-fusion document of a prepared run (ERROR when it has no GPU time or no
    unified table to model the candidates' kernels with)."""
    baseline_ms = inputs.manifest.gpu_utilization.total_time_ms
    if inputs.unified is None:
        return error("the run has no unified_perf_summary table to model the kernels with")
    if baseline_ms <= 0:
        return error("the run's GPU time (gpu_utilization.total_time_ms) is not positive")
    candidates = [c for c in inputs.fusion_candidates if isinstance(c, FusionCandidate)]
    survivors = prefilter(candidates, baseline_ms)
    if not survivors:
        return KernelFusionMetrics(status="NO_DATA", candidate_count=0, impact_estimates=[])
    platform = inputs.platform.name if inputs.platform else None
    peaks = _peaks(inputs.platform)
    lookup = PerfLookup(inputs.unified)
    estimates = [e for c in survivors if (e := estimate(c, lookup, peaks, baseline_ms))]
    estimates.sort(key=lambda e: -e.impact_score)
    warnings = list(dict.fromkeys(e.warning for e in estimates if e.warning))
    kernel_map = high_confidence_map(estimates)
    return KernelFusionMetrics(
        status="OK",
        total_time_ms=round(sum(c.total_kernel_time_us for c in survivors) / 1000, 3),
        candidate_count=len(survivors),
        estimated_count=len(estimates),
        total_impact_score=round(sum(e.impact_score for e in estimates), 2),
        platform=platform,
        peak_hbm_bw_tbs=peaks.hbm_tbs,
        impact_estimates=estimates,
        warnings=warnings or None,
        high_confidence_kernel_map=kernel_map,
    )
