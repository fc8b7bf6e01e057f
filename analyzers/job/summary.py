"""One rank reduced to what the job analysis needs: its GPU timeline, category times,
collectives, top operations and host-side facts, small enough to ship from a worker.

Every figure is computed by the single-trace engine (the trace model, its GPU timeline,
rule-A launcher attribution, the iteration finder); nothing here re-derives them.
Definitions: docs/multirank.md#per-rank-summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..perf.categories import default_table
from ..perf.platforms import Platform, get_platform
from ..report.launchers import attribute_launchers
from ..report.ops_tables import ops_summary, ops_summary_by_category
from ..trace.columns import name_matches
from ..trace.device import identify_gpu
from ..trace.intervals import merge
from ..trace.iterations import find_iterations
from ..trace.model import TraceModel
from ..trace.open_trace import open_trace
from ..trace.timeline import Timeline
from .collectives import RankCollectives, rank_collectives, rank_of

TOP_OPS = 10  # operations kept per rank: enough to find the one a slow rank spends more on
DATA_LOADING = ("DataLoader",)  # host spans whose name holds one of these load the batch


@dataclass(frozen=True, slots=True)
class RankTimeline:
    """Where one rank's GPU time went (µs), as the single-trace GPU timeline measures it."""

    compute_us: float
    exposed_comm_us: float
    exposed_copy_us: float
    idle_us: float
    total_us: float
    comm_us: float  # all communication, hidden under compute or not

    @classmethod
    def of(cls, t: Timeline) -> RankTimeline:
        return cls(
            compute_us=t.computation_time,
            exposed_comm_us=t.exposed_comm_time,
            exposed_copy_us=t.exposed_memcpy_time,
            idle_us=t.idle_time,
            total_us=t.total_time,
            comm_us=t.total_comm_time,
        )


@dataclass(frozen=True, slots=True)
class TopOp:
    """One operation name's GPU time on a rank (rule A: kernels it launched directly)."""

    name: str
    count: int
    gpu_us: float
    category: str


@dataclass(frozen=True)
class RankSummary:
    """One rank of a job, as a per-rank task returns it (picklable, a few kB plus the
    collectives table).

    `steps` is the number of `ProfilerStep#` spans (0 when the trace marks none, in which case
    per-step figures are not given). `data_loading_us` is the union of the host's data-loader
    spans; `categories` the GPU time per op category (rule A), largest first.
    """

    rank: int
    path: str
    world_size: int | None
    device: str
    platform: Platform | None
    timeline: RankTimeline
    categories: tuple[tuple[str, float], ...]
    collectives: RankCollectives
    top_ops: tuple[TopOp, ...]
    steps: int
    data_loading_us: float

    @property
    def name(self) -> str:
        return Path(self.path).name


def summarise_rank(
    source: str | Path | TraceModel,
    rank: int | None = None,
    platform: Platform | str | None = None,
) -> RankSummary:
    """Summarise one rank's trace (a path, or a model already built).

    The rank is `rank` when given, else the trace's `distributedInfo` (NoRank otherwise);
    the platform is the one given (a Platform or a catalogue name), else the one the trace's
    GPU suggests, else None.
    """
    model = source if isinstance(source, TraceModel) else open_trace(source)
    trace = model.trace
    used = sorted(int(d) for d in np.unique(model.gpu["device"].to_numpy()))
    gpu = identify_gpu(trace.meta.devices, trace.meta.versions, used)
    if isinstance(platform, str):
        platform = get_platform(platform)
    elif platform is None and gpu.suggested_platform:
        platform = get_platform(gpu.suggested_platform)
    info = trace.meta.distributed
    categories, top = _operations(model)
    steps = find_iterations(model, method="profiler_step")
    return RankSummary(
        rank=rank_of(trace, rank),
        path=str(trace.path),
        world_size=info.world_size if info is not None else None,
        device=gpu.model,
        platform=platform,
        timeline=RankTimeline.of(model.gpu_timeline().pooled),
        categories=categories,
        collectives=rank_collectives(model, rank),
        top_ops=top,
        steps=steps.count if steps.method == "profiler_step" else 0,
        data_loading_us=_data_loading_us(model),
    )


def _operations(model: TraceModel) -> tuple[tuple[tuple[str, float], ...], tuple[TopOp, ...]]:
    """GPU time per op category and the top operations by GPU time (rule A launchers)."""
    has_ops = bool((model.events["cat"] == "cpu_op").any()) and bool(model.gpu["linked"].any())
    if not has_ops:
        return (), ()
    launchers = attribute_launchers(model, default_table())
    by_category = ops_summary_by_category(launchers)
    categories = tuple(
        (str(c), float(ms) * 1e3)
        for c, ms in zip(
            by_category["op category"], by_category["total_direct_kernel_time_ms"], strict=True
        )
    )
    ops = ops_summary(launchers).head(TOP_OPS)
    top = tuple(
        TopOp(
            name=str(row.name),
            count=int(row.Count),
            gpu_us=float(row.total_direct_kernel_time_sum),
            category=", ".join(row.Categories),
        )
        for row in ops.itertuples(index=False)
    )
    return categories, top


def _data_loading_us(model: TraceModel) -> float:
    """Host time inside data-loader spans (their union: nested spans count once)."""
    ev = model.events
    host = ev["cat"].isin(("user_annotation", "cpu_op", "python_function")).to_numpy()
    loading = host & name_matches(ev["name"], lambda n: any(k in n for k in DATA_LOADING))
    if not loading.any():
        return 0.0
    start = ev["ts"].to_numpy(np.float64)[loading]
    end = start + np.nan_to_num(ev["dur"].to_numpy(np.float64)[loading])
    return float(merge(start, end).length())
