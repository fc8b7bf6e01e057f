"""Per-category data for the analyses: `<key>_ops.csv`, metadata JSON and the manifest.

See docs/analysis.md#manifest and docs/analysis.md#metadata. Our deliberate differences
(docs/deviations.md#manifest-paths-are-relative-top-operations-are-persisted): the manifest's
file paths are relative to the run folder ("category_data/gemm_ops.csv"), and the manifest
persists the top operations (TraceLens only prints them). Keys and values are otherwise TraceLens's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict

from .. import layout
from ..layout import CPU_IDLE, KERNEL_FUSION, MULTI_KERNEL
from ..perf.platforms import Platform
from ..report.build import PerfReport
from .categories import (
    TIME_METRIC_NOTE,
    GpuUtilization,
    TimeBreakdown,
    gpu_utilization,
    normalise_category,
    skill_for,
    time_breakdown,
)
from .computation_time import COLUMN, RowComputation
from .copy_rows import without_copies
from .document_base import ComparisonScope, OmitNone
from .kernel_rows import NOTE as KERNEL_ROWS_NOTE
from .tree_data import tree_data

TRACE_LOADING_POLICY = "DO_NOT_LOAD_TRACE_use_precomputed_tree_data"
CPU_IDLE_DISPLAY = "CPU/Idle Analysis"
MULTI_KERNEL_DISPLAY = "Multi-Kernel Issues"
KERNEL_FUSION_DISPLAY = "Kernel Fusion Opportunities"
TOP_OPERATIONS = 10
NO_PLATFORM_NOTE = (
    "No platform is known (platform null): the metadata carry no roofs, so no operation has "
    "a roofline efficiency or a roofline-based estimate (docs/analysis.md#without-a-platform)."
)

# which analysis a manifest category feeds: a system analysis or a compute-category one
CategoryTier = Literal["system", "compute_kernel"]


class CategoryEntry(OmitNone):
    """One `categories[]` entry of the manifest."""

    model_config = ConfigDict(extra="forbid")
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {
            "data_file",
            "tree_data_file",
            "priority",
            "gpu_kernel_time_ms",
            "cpu_duration_ms",
            "sync_time_ms",
            "sync_ops_count",
            "has_sync_bottleneck",
        }
    )

    name: str
    display_name: str
    skill: str
    tier: CategoryTier
    ops_count: int
    csv_file: str | None
    metadata_file: str | None
    data_file: str | None = None
    tree_data_file: str | None = None  # ours: TraceLens documents it but never writes it
    priority: int | None = None
    gpu_kernel_time_ms: float | None = None
    cpu_duration_ms: float | None = None
    sync_time_ms: int | float | None = None
    sync_ops_count: int | None = None
    has_sync_bottleneck: bool | None = None

    def with_breakdown(self, breakdown: TimeBreakdown) -> CategoryEntry:
        return self.model_copy(update=breakdown.model_dump(exclude={"note"}))


class TopOperation(BaseModel):
    """One of the operators with the most direct kernel time (ops_summary)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    total_direct_kernel_time_ms: float
    category: str


class Manifest(OmitNone):
    """`category_data/category_manifest.json` plus `top_operations`."""

    model_config = ConfigDict(extra="forbid")
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"trace2_gpu_utilization", "trace2_ops_summary_by_category", "notes", "judged_window_ms"}
    )

    platform: str | None  # null: no platform known, no roofline (docs/analysis.md)
    trace_path: str
    output_dir: str
    comparison_scope: ComparisonScope
    gpu_utilization: GpuUtilization
    # the window less its one-off idle (set-up, warm-up, tail), when iterations show one:
    # what a finding's size is judged against (docs/analysis.md#phases)
    judged_window_ms: float | None = None
    categories: list[CategoryEntry]
    time_metric_note: str = TIME_METRIC_NOTE
    trace2_gpu_utilization: GpuUtilization | None = None
    trace2_ops_summary_by_category: list[dict[str, Any]] | None = None
    top_operations: list[TopOperation]
    # why categories are missing, e.g. a GPU-only trace (TraceLens fails on those instead)
    notes: list[str] | None = None


class CategoryMetadata(OmitNone):
    """`metadata/<key>_metadata.json` (docs/analysis.md#metadata)."""

    model_config = ConfigDict(extra="forbid")
    OMIT_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"trace_loading_policy", "time_breakdown", "tier", "judged_window_ms"}
    )

    platform: str | None  # null, with no roofs: no platform known
    peak_hbm_bw_tbs: float | None
    max_achievable_tflops: dict[str, float]
    memory_gb: float | None
    trace_path: str
    output_dir: str
    category: str
    category_name: str
    gpu_utilization: GpuUtilization
    judged_window_ms: float | None = None  # as the manifest's
    trace_loading_policy: str | None = None
    time_breakdown: TimeBreakdown | None = None
    tier: CategoryTier | None = None


@dataclass(frozen=True)
class CategoryTables:
    """The category data of one run, in memory: what the analyses and the folder read."""

    manifest: Manifest
    ops: dict[str, pd.DataFrame]  # key -> its rows of the unified table (cells as objects)
    metadata: dict[str, CategoryMetadata]
    tree_data: dict[str, dict[str, Any]]


def top_operations(ops_summary: pd.DataFrame | None) -> list[TopOperation]:
    """The first ten operators of ops_summary by direct kernel time (persisted)."""
    if ops_summary is None or ops_summary.empty:
        return []
    if "total_direct_kernel_time_ms" in ops_summary:
        time_ms = pd.to_numeric(ops_summary["total_direct_kernel_time_ms"], errors="coerce")
    elif "Kernel Time (µs)_sum" in ops_summary:
        time_ms = pd.to_numeric(ops_summary["Kernel Time (µs)_sum"], errors="coerce") / 1000
    else:
        return []
    ranked = ops_summary.assign(_ms=time_ms.fillna(0.0)).sort_values(
        "_ms", ascending=False, kind="stable"
    )
    out = []
    for _, row in ranked.head(TOP_OPERATIONS).iterrows():
        categories = row.get("Categories", row.get("op category"))
        if isinstance(categories, list | tuple):
            category = ", ".join(map(str, categories))
        else:
            category = "" if pd.isna(categories) else str(categories)
        out.append(
            TopOperation(
                name=str(row["name"]),
                total_direct_kernel_time_ms=float(row["_ms"]),
                category=category,
            )
        )
    return out


def categorise(
    report: PerfReport,
    platform: Platform | None,
    trace_path: str,
    output_dir: str,
    *,
    has_multi_kernel: bool,
    fusion_count: int,
    scope: ComparisonScope = "standalone",
    computation: RowComputation | None = None,
    kernel_table: pd.DataFrame | None = None,
    one_off_idle_ms: float = 0.0,
) -> CategoryTables:
    """Split the unified table into categories, with their metadata and the manifest.

    `has_multi_kernel` says whether copies or collectives warrant the multi-kernel category,
    `fusion_count` (the fusion candidates found) whether kernel fusion has one. The manifest
    and metadata name `output_dir` (the run's final folder). With `computation` (what the
    pipeline passes), each category's time is its share of the timeline's computation time and
    rows that ran only copies or memsets leave the compute categories
    (docs/analysis.md#category-time); without it the figures are TraceLens's. A trace with no
    unified table takes `kernel_table`, its kernels by name (prepare/kernel_rows.py).
    `one_off_idle_ms`, the idle of the window's set-up, warm-up and tail, sets the judged
    window.
    """
    utilization = GpuUtilization(**gpu_utilization(report.sheets.get("gpu_timeline")))
    judged = judged_window_ms(utilization, one_off_idle_ms)
    common = _common_metadata(platform, trace_path, output_dir, utilization)
    common["judged_window_ms"] = judged
    manifest = Manifest(
        platform=platform.name if platform else None,
        trace_path=trace_path,
        output_dir=output_dir,
        comparison_scope=scope,
        gpu_utilization=utilization,
        judged_window_ms=judged,
        categories=[],
        top_operations=top_operations(report.sheets.get("ops_summary")),
        notes=[*report.notes, *([] if platform else [NO_PLATFORM_NOTE])] or None,
    )
    tables = _with_cpu_idle(manifest, common)
    entries = tables.manifest.categories
    unified = _compute_rows(report, manifest, computation, kernel_table)
    if unified is not None and not unified.empty:
        _add_compute_categories(tables, unified, common)
    if has_multi_kernel:
        tables.metadata[MULTI_KERNEL] = CategoryMetadata(
            **common, category=MULTI_KERNEL_DISPLAY, category_name=MULTI_KERNEL, tier="system"
        )
        entries.append(_system_entry(MULTI_KERNEL, MULTI_KERNEL_DISPLAY, None, 0))
    if fusion_count:
        fusion = _system_entry(KERNEL_FUSION, KERNEL_FUSION_DISPLAY, None, fusion_count)
        entries.append(fusion.with_breakdown(TimeBreakdown.zeros()))
    return tables


def judged_window_ms(utilization: GpuUtilization, one_off_idle_ms: float) -> float | None:
    """The window less its one-off idle, never below the GPU's busy time; None when nothing
    is one-off (the analysed window is judged as it is)."""
    total = utilization.total_time_ms
    if one_off_idle_ms <= 0 or total <= 0:
        return None
    busy = total * (1 - utilization.idle_time_percent / 100)
    return round(max(busy, total - one_off_idle_ms), 3)


def _with_cpu_idle(manifest: Manifest, common: dict) -> CategoryTables:
    """The tables of a run before its compute categories: the manifest and CPU/idle."""
    tables = CategoryTables(
        manifest=manifest,
        ops={CPU_IDLE: pd.DataFrame()},
        metadata={
            CPU_IDLE: CategoryMetadata(**common, category=CPU_IDLE_DISPLAY, category_name=CPU_IDLE)
        },
        tree_data={},
    )
    entry = _system_entry(CPU_IDLE, CPU_IDLE_DISPLAY, layout.ops_csv(CPU_IDLE), 0)
    tables.manifest.categories.append(entry)
    return tables


def _compute_rows(
    report: PerfReport,
    manifest: Manifest,
    computation: RowComputation | None,
    kernel_table: pd.DataFrame | None,
) -> pd.DataFrame | None:
    """The rows the compute categories are split from: the unified table (its times the
    computation shares when `computation` is given), else the kernels by name."""
    unified = report.sheets.get("unified_perf_summary")
    if unified is not None and computation is not None:
        return _computation_rows(unified, computation, manifest)
    if unified is None and kernel_table is not None and not kernel_table.empty:
        manifest.notes = [*(manifest.notes or []), KERNEL_ROWS_NOTE]
        return kernel_table
    return unified


def _computation_rows(
    unified: pd.DataFrame, computation: RowComputation, manifest: Manifest
) -> pd.DataFrame:
    """The unified rows with their computation time; rows that ran no computation kernel
    (copies, memsets) leave, and the manifest notes say how many and how much time; rows that
    also ran copies lose the copies' time (copy_rows.py)."""
    uid = unified["ex_UID"].astype(int)
    computes = uid.map(computation.computes).fillna(False).astype(bool).to_numpy()
    rows = unified.assign(**{COLUMN: uid.map(computation.time_us).fillna(0.0).to_numpy()})
    left = rows[~computes]
    if len(left):
        kernel_ms = float(pd.to_numeric(left["Kernel Time (µs)_sum"]).sum()) / 1000.0
        note = (
            f"{len(left)} operator rows ({kernel_ms:.3f} ms of GPU time) ran only copies or "
            "memsets: they are not in the compute categories (see multi_kernel for copies)."
        )
        manifest.notes = [*(manifest.notes or []), note]
    return without_copies(rows[computes], computation.copy_us)


def _common_metadata(
    platform: Platform | None, trace_path: str, output_dir: str, utilization: GpuUtilization
) -> dict[str, Any]:
    """The metadata every category shares: the platform's roofs (none without a platform)
    and the run's utilisation."""
    run = {"trace_path": trace_path, "output_dir": output_dir, "gpu_utilization": utilization}
    if platform is None:
        return {"platform": None, "peak_hbm_bw_tbs": None, "max_achievable_tflops": {},
                "memory_gb": None, **run}  # fmt: skip
    return {
        "platform": platform.name,
        "peak_hbm_bw_tbs": platform.mem_bw() / 1000.0,
        "max_achievable_tflops": {
            spec: roof
            for spec in platform.compute_specs()
            if (roof := platform.roof_tflops(spec)) is not None
        },
        "memory_gb": platform.memory_gb,
        **run,
    }


_SYSTEM_DATA = {MULTI_KERNEL: layout.MULTI_KERNEL_DATA, KERNEL_FUSION: layout.FUSION_CANDIDATES}


def _system_entry(key: str, display: str, csv_file: str | None, count: int) -> CategoryEntry:
    return CategoryEntry(
        name=key,
        display_name=display,
        skill=skill_for(key),
        tier="system",
        ops_count=count,
        csv_file=csv_file,
        metadata_file=None if key == KERNEL_FUSION else layout.metadata(key),
        data_file=_SYSTEM_DATA.get(key),
        priority=0 if key == CPU_IDLE else None,
    )


def _add_compute_categories(
    tables: CategoryTables, unified: pd.DataFrame, common: dict[str, Any]
) -> None:
    """One category per normalised `op category`, in first-appearance order."""
    pairs = [normalise_category(v) for v in unified["op category"]]
    keys = pd.Series([k for k, _ in pairs], index=unified.index)
    rows_all = unified.assign(enhanced_category=keys.to_numpy(), display_name=[d for _, d in pairs])
    for key in dict.fromkeys(keys):
        rows = rows_all[(keys == key).to_numpy()]
        display = str(rows["display_name"].iloc[0])
        breakdown = time_breakdown(rows)
        tables.ops[key] = rows
        tables.tree_data[key] = tree_data(key, rows)
        tables.metadata[key] = CategoryMetadata(
            **common,
            category=display,
            category_name=key,
            trace_loading_policy=TRACE_LOADING_POLICY,
            time_breakdown=breakdown,
        )
        entry = CategoryEntry(
            name=key,
            display_name=display,
            skill=skill_for(key),
            tier="compute_kernel",
            ops_count=len(rows),
            csv_file=layout.ops_csv(key),
            metadata_file=layout.metadata(key),
            tree_data_file=layout.tree_data(key),
        )
        tables.manifest.categories.append(entry.with_breakdown(breakdown))
