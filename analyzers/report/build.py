"""Assemble the perf report: every sheet, in TraceLens's order, from one linked trace."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from ..perf import registry
from ..perf.base import PerfModel
from ..perf.categories import CategoryTable, default_table
from ..perf.platforms import Platform
from ..trace.model import TraceModel
from ..trace.timeline import GpuTimeline
from .kernel_summary import kernel_summary
from .launchers import attribute_launchers
from .ops_tables import (
    ops_summary,
    ops_summary_by_category,
    ops_unique_args,
)
from .unified import attribute_unified
from .unified_table import UnifiedTable, build_unified


@dataclass(frozen=True)
class PerfReport:
    """The report's sheets (name -> table, in order) and what produced them."""

    sheets: dict[str, pd.DataFrame]
    timeline: GpuTimeline
    unified: UnifiedTable | None
    platform: Platform | None
    notes: list[str] = field(default_factory=list)


def timeline_sheet(timeline: GpuTimeline) -> pd.DataFrame:
    return pd.DataFrame(timeline.pooled.rows())


def per_device_sheet(timeline: GpuTimeline) -> pd.DataFrame:
    rows = [
        {"device": device, **row}
        for device, t in sorted(timeline.per_device.items())
        for row in t.rows()
    ]
    return pd.DataFrame(rows)


def build_report(
    model: TraceModel,
    platform: Platform | None,
    *,
    categories: CategoryTable | None = None,
    model_for: Callable[[str], PerfModel | None] = registry.model_for,
    takes_whole: Callable[[str], bool] = registry.has_model,
) -> PerfReport:
    """Every sheet of the perf report for one trace (models default to the registry)."""
    categories = categories or default_table()
    timeline = model.gpu_timeline()
    sheets: dict[str, pd.DataFrame] = {"gpu_timeline": timeline_sheet(timeline)}
    if len(timeline.per_device) > 1:
        sheets["gpu_timeline_per_device"] = per_device_sheet(timeline)
    notes: list[str] = []
    unified = None
    has_cpu_ops = bool((model.events["cat"] == "cpu_op").any())
    if has_cpu_ops and model.gpu["linked"].any():
        launchers = attribute_launchers(model, categories)
        sheets["ops_summary_by_category"] = ops_summary_by_category(launchers)
        sheets["ops_summary"] = ops_summary(launchers)
        sheets["ops_unique_args"] = ops_unique_args(launchers)
        unified_ops = attribute_unified(model, takes_whole, registry.has_backward)
        unified = build_unified(model, unified_ops, categories, model_for, platform)
        sheets["unified_perf_summary"] = unified.summary
    else:
        notes.append(
            "The trace has no operator events (or no linked GPU work): only the GPU timeline "
            "and kernel summary can be built."
        )
    sheets["kernel_summary"] = kernel_summary(model, categories, timeline.pooled.total_time)
    return PerfReport(
        sheets=sheets, timeline=timeline, unified=unified, platform=platform, notes=notes
    )
