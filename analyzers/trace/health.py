"""Trace health: what the trace recorded, what it lacks, and what each gap costs the analysis.

Every limitation becomes a `HealthWarning` in plain language: which part of the analysis it
weakens and how to profile again to avoid it. Nothing here echoes free-form trace metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel

from .columns import name_matches
from .device import GpuIdentity, identify_gpu
from .host_filter import FilteredHost, filtered_host
from .model import MODULE_PREFIX, TraceModel
from .range_counters import RangeCounters
from .schema import GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES
from .skip import REASONS

if TYPE_CHECKING:
    import pandas as pd

PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)")

Severity = Literal["error", "warning", "info"]


class HealthWarning(BaseModel):
    """One limitation of the trace: what it weakens and how to profile again."""

    code: str
    severity: Severity
    message: str


class Linking(BaseModel):
    key: str
    by_flow_events: bool
    gpu_events: int
    linked: int
    unlinked: int
    unlinked_gpu_time_ms: float


class Distributed(BaseModel):
    backend: str | None
    rank: int | None
    world_size: int | None
    collective_kernels: int
    collective_names: list[str]


class CaptureFile(BaseModel):
    file: str
    batch_size: int | None
    mode: str
    classified_by: str
    capture_windows: int


class CaptureMergeHealth(BaseModel):
    """How many graph replays got capture-time operators (docs/trace.md#graph-capture-merge)."""

    folder: str
    captures: list[CaptureFile]
    graph_launches: int
    merged_graph_launches: int
    merged_gpu_events: int
    problems: list[str]


class TraceHealth(BaseModel):
    """Facts about one trace file that decide how far its analysis can be trusted."""

    file: str
    json_mb: float
    events: int
    events_by_category: dict[str, int]
    gpu: GpuIdentity
    devices_with_gpu_events: list[int]
    shapes_recorded: bool
    concrete_inputs_recorded: bool
    python_stacks_recorded: bool
    module_names_recorded: bool
    execution: Literal["eager", "graph replay", "mixed", "no GPU work", "hardware counters only"]
    graph_launches: int
    distributed: Distributed
    merged_ranks: bool
    host_processes_launching: int
    linking: Linking
    host_events_bled: int
    host_events_dropped: int
    profiler_steps: list[int]
    capture_merge: CaptureMergeHealth | None = None
    malformed_values: dict[str, int]
    repaired_text_batches: int
    skipped_events: dict[str, int] = {}  # reason (skip.REASONS) -> events left out
    # a CUPTI range-profiler trace: per-kernel counters, no timeline (range_counters.py)
    counters: RangeCounters | None = None
    # the host side was filtered to its launches: host-side findings are partial (host_filter.py)
    host_filtered: FilteredHost | None = None
    warnings: list[HealthWarning]

    @property
    def host_partial(self) -> bool:
        """The host side was filtered: an idle cause named from it is a lower bound."""
        return self.host_filtered is not None


def assess(model: TraceModel) -> TraceHealth:
    """Collect the health facts of a linked trace and the warnings they imply."""
    ev = model.recorded  # what the file holds; grafted capture rows are reported apart
    trace = model.trace
    cat = ev["cat"]
    counts = {str(k): int(v) for k, v in cat.value_counts().items() if v}
    gpu = model.gpu
    devices = sorted(int(d) for d in np.unique(gpu["device"].to_numpy()))
    cpu_ops = (cat == "cpu_op").to_numpy()
    python = (cat == "python_function").to_numpy()
    launches = cat.isin(LAUNCH_CATEGORIES).to_numpy()
    graph = launches & name_matches(ev["name"], lambda n: n in GRAPH_LAUNCH_NAMES)
    n_graph = int(graph.sum())
    n_launch = int(launches.sum())
    health = TraceHealth(
        file=trace.path.name,
        json_mb=round(trace.json_bytes / 1e6, 3),
        events=len(ev),
        events_by_category=dict(sorted(counts.items())),
        gpu=identify_gpu(trace.meta.devices, trace.meta.versions, devices),
        devices_with_gpu_events=devices,
        shapes_recorded=bool(
            cpu_ops.any() and (ev["input_dims"].notna().to_numpy() & cpu_ops).any()
        ),
        concrete_inputs_recorded=bool(
            cpu_ops.any() and (ev["concrete_inputs"].notna().to_numpy() & cpu_ops).any()
        ),
        python_stacks_recorded=bool(python.any()),
        module_names_recorded=bool(
            (python & name_matches(ev["name"], lambda n: n.startswith(MODULE_PREFIX))).any()
        ),
        execution=_execution(len(gpu), n_graph, n_launch, trace.counters is not None),
        graph_launches=n_graph,
        distributed=_distributed(model),
        merged_ranks=model.links.colliding_ids > 0,
        host_processes_launching=int(ev.loc[launches, "pid"].nunique()),
        linking=_linking(model),
        host_events_bled=len(model.tree.bled),
        host_events_dropped=len(model.tree.dropped),
        profiler_steps=_profiler_steps(ev),
        capture_merge=_capture_health(model),
        malformed_values=dict(trace.bad_values),
        repaired_text_batches=trace.repaired_utf8_batches,
        skipped_events=dict(trace.skipped),
        counters=trace.counters,
        host_filtered=filtered_host(model),
        warnings=[],
    )
    health.warnings = warnings_for(health, has_cpu_ops=bool(cpu_ops.any()))
    return health


def _distributed(model: TraceModel) -> Distributed:
    """The process group the trace names and the collective kernels it ran."""
    gpu = model.gpu
    comm_names = gpu.loc[(gpu["bucket"] == "communication").to_numpy(), "name"]
    dist = model.trace.meta.distributed
    return Distributed(
        backend=dist.backend if dist else None,
        rank=dist.rank if dist else None,
        world_size=dist.world_size if dist else None,
        collective_kernels=len(comm_names),
        collective_names=sorted(comm_names.astype(str).unique().tolist())[:10],
    )


def _linking(model: TraceModel) -> Linking:
    """How many GPU events found their host launch, and the GPU time of those that did not."""
    gpu = model.gpu
    unlinked = gpu[~gpu["linked"].to_numpy()]
    return Linking(
        key=model.links.key,
        by_flow_events=model.links.by_flow,
        gpu_events=len(gpu),
        linked=int(gpu["linked"].sum()),
        unlinked=len(unlinked),
        unlinked_gpu_time_ms=round(float(np.nansum(unlinked["dur"].to_numpy())) / 1e3, 6),
    )


def _profiler_steps(ev: pd.DataFrame) -> list[int]:
    """The iteration numbers of the ProfilerStep#N annotations, sorted (2021 Kineto wrote
    them as operators, `"cat": "Operator"`, which loads as cpu_op)."""
    marks = ev["cat"].isin(("user_annotation", "cpu_op")).to_numpy() & name_matches(
        ev["name"], lambda n: PROFILER_STEP.fullmatch(n) is not None
    )
    names = ev.loc[marks, "name"].astype(str).unique()
    return sorted({int(m.group(1)) for n in names if (m := PROFILER_STEP.fullmatch(n))})


def _capture_health(model: TraceModel) -> CaptureMergeHealth | None:
    merge = model.capture
    if merge is None:
        return None
    return CaptureMergeHealth(
        folder=Path(merge.folder).name,
        captures=[
            CaptureFile(file=f, batch_size=b, mode=m, classified_by=src, capture_windows=w)
            for f, b, m, src, w in merge.captures
        ],
        graph_launches=merge.graph_launches,
        merged_graph_launches=merge.merged_launches,
        merged_gpu_events=merge.merged_gpu_events,
        problems=list(merge.problems),
    )


def _execution(n_gpu: int, n_graph: int, n_launch: int, counters: bool) -> str:
    if n_gpu == 0:
        return "hardware counters only" if counters else "no GPU work"
    if n_graph == 0:
        return "eager"
    return "graph replay" if n_graph == n_launch else "mixed"


def warnings_for(h: TraceHealth, *, has_cpu_ops: bool) -> list[HealthWarning]:
    """Plain-language limitations, most severe first (the order of `_CHECKS`)."""
    return [w for check in _CHECKS for w in check(h, has_cpu_ops)]


def _warning(code: str, severity: Severity, message: str) -> HealthWarning:
    return HealthWarning(code=code, severity=severity, message=message)


def _coverage_warnings(h: TraceHealth, has_cpu_ops: bool) -> Iterator[HealthWarning]:
    """Whether the trace holds GPU work, linked launches, operators and shapes at all."""
    if h.linking.gpu_events == 0 and h.counters is not None:
        text = counters_only_message(h.counters)
        yield _warning("counters_only", "error", f"{text[0].upper()}{text[1:]}")
    elif h.linking.gpu_events == 0:
        yield _warning(
            "no_gpu_events",
            "error",
            "The trace holds no GPU kernels, copies or memsets, so there is no GPU time to "
            "analyse. Profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] "
            "(CUDA also covers ROCm).",
        )
    elif h.linking.linked == 0:
        yield _warning(
            "no_linked_gpu_events",
            "error",
            "No GPU event could be tied to a host launch, so the timeline (which counts linked "
            "events only) is empty and no kernel can be attributed to an operator. Profile the "
            "CPU side too, or use --include-unlinked to measure the GPU events alone.",
        )
    if not has_cpu_ops and h.linking.gpu_events:
        yield _warning(
            "gpu_only",
            "warning",
            "The trace has no PyTorch operator (cpu_op) events: the GPU timeline works, but "
            "kernels cannot be attributed to operators, so per-op tables, roofline and "
            "category analyses will be empty. Profile with ProfilerActivity.CPU enabled.",
        )
    elif has_cpu_ops and not h.shapes_recorded:
        yield _warning(
            "no_shapes",
            "warning",
            "Operator input shapes were not recorded, so FLOPs and bytes cannot be computed "
            "and no roofline efficiency is available. Profile with record_shapes=True.",
        )
    elif has_cpu_ops and not h.concrete_inputs_recorded:
        yield _warning(
            "no_concrete_inputs",
            "warning",
            "Operator scalar arguments (Concrete Inputs) were not recorded, as in traces from "
            "older PyTorch versions, so operators whose FLOPs or bytes depend on them "
            "(convolution stride, padding and dilation; reduction dims; normalisation "
            "arguments) stay unmodelled. Profile with a recent PyTorch and record_shapes=True.",
        )


def counters_only_message(counters: RangeCounters) -> str:
    """What a range-profiler trace is, and why it has nothing to rank (lower case first)."""
    return (
        f"the trace holds {counters.describe()}. There is nothing to rank: rooflens ranks "
        "findings by their share of a GPU timeline, and the range profiler replays each "
        "kernel alone. "
        "Read the counters with Nsight Compute, or profile with torch.profiler (activities="
        "[ProfilerActivity.CPU, ProfilerActivity.CUDA]) for a timeline."
    )


def _placement_warnings(h: TraceHealth, has_cpu_ops: bool) -> Iterator[HealthWarning]:
    """GPU events the timeline cannot place: unlinked, merged ranks, several devices."""
    if h.linking.unlinked:
        share = h.linking.unlinked / h.linking.gpu_events * 100
        yield _warning(
            "unlinked_gpu_events",
            "warning",
            f"{h.linking.unlinked} GPU events ({share:.1f} %, {h.linking.unlinked_gpu_time_ms:.3f}"
            " ms of kernel time) have no host launch in the trace, usually because they were "
            "launched before the profiling window opened. They are left out of the timeline, "
            "as TraceLens does. Use a profiler schedule with a warm-up step "
            "(schedule(wait=1, warmup=1, active=N)) so windows start on a clean boundary.",
        )
    if h.merged_ranks:
        yield _warning(
            "merged_ranks",
            "error",
            "Launch correlation ids repeat across host processes: this file looks like several "
            "ranks merged into one. Links between launches and kernels become ambiguous and "
            "times are pooled across ranks. Analyse one trace file per rank.",
        )
    if len(h.devices_with_gpu_events) > 1:
        yield _warning(
            "several_devices",
            "warning",
            f"GPU events come from {len(h.devices_with_gpu_events)} devices; the pooled "
            "timeline treats them as one GPU (as TraceLens does). Read the per-device "
            "timelines for each GPU's own utilisation.",
        )


def _graph_warnings(h: TraceHealth, has_cpu_ops: bool) -> Iterator[HealthWarning]:
    """Graph replays: which got their capture-time operators and which did not."""
    merge = h.capture_merge
    if merge is not None and merge.merged_graph_launches:
        yield _warning(
            "graph_capture_merged",
            "info",
            f"{merge.merged_graph_launches} of {merge.graph_launches} graph launches "
            f"({merge.merged_gpu_events} replayed GPU events) got the operators and shapes "
            f"recorded when the graphs were captured (folder {merge.folder}). Their CPU "
            "durations are the graph launch's, not the operators' own.",
        )
    if merge is not None and merge.merged_graph_launches < merge.graph_launches:
        yield _warning(
            "graph_capture_unmerged",
            "warning",
            f"{merge.graph_launches - merge.merged_graph_launches} graph launches kept no "
            "operators: " + "; ".join(merge.problems) + ". Their kernels are attributed to "
            "the graph launch, without shapes.",
        )
    elif merge is None and h.execution in ("graph replay", "mixed"):
        yield _warning(
            "graph_replay",
            "info",
            "Kernels replayed from CUDA/HIP graphs have no operator or shapes of their own; "
            "they are attributed to the graph launch. Profile the graph-capture step too and "
            "pass its trace folder (--capture-folder, or a 'capture_traces' folder beside "
            "this trace) to give those kernels their operators and shapes.",
        )


def _host_warnings(h: TraceHealth, has_cpu_ops: bool) -> Iterator[HealthWarning]:
    """Host-side context the profiler was not asked for, filtered away, or dropped."""
    if h.host_filtered is not None:
        yield _warning(
            "host_side_filtered",
            "warning",
            f"The host side looks filtered: {h.host_filtered.describe()}. The GPU timeline "
            "is whole, but what held the host between launches is not recorded, so the idle "
            "causes are partial: a named cause is a lower bound, and idle that an allocation, "
            "a synchronise or a stream wait caused shows up under the operator in flight. "
            "Profile with torch.profiler directly, without filtering the exported events.",
        )
    if h.python_stacks_recorded is False and has_cpu_ops:
        yield _warning(
            "no_python_stacks",
            "info",
            "Python call stacks were not recorded, so operators cannot be traced back to "
            "source lines. Profile with with_stack=True.",
        )
    if not h.module_names_recorded and has_cpu_ops:
        yield _warning(
            "no_module_names",
            "info",
            "nn.Module names were not recorded, so time cannot be grouped by model layer. "
            "Profile with with_modules=True (needs with_stack=True).",
        )
    if h.host_events_dropped:
        yield _warning(
            "host_events_dropped",
            "info",
            f"{h.host_events_dropped} host events ended more than 1 µs after the event they "
            "started in and were left out of the call tree (TraceLens's rule); launches made "
            "inside them are attributed to the enclosing operator instead.",
        )


def _reading_warnings(h: TraceHealth, has_cpu_ops: bool) -> Iterator[HealthWarning]:
    """Events and values the reader could not use, and a trace with no step markers."""
    if h.skipped_events:
        total = sum(h.skipped_events.values())
        parts = "; ".join(f"{n} {REASONS.get(r, r)}" for r, n in h.skipped_events.items())
        yield _warning(
            "skipped_events",
            "warning",
            f"{total} events were left out because the analysis cannot place them: {parts}. "
            "Their time counts nowhere (timeline, tables, roofline). The tool that wrote or "
            "edited the trace produced them; re-export it from torch.profiler if you can.",
        )
    if h.malformed_values or h.repaired_text_batches:
        yield _warning(
            "malformed_values",
            "info",
            "Some values could not be read as their expected type (integers beyond 64 bits, "
            "text where numbers belong, an 'args' that is not an object, or invalid UTF-8 "
            "and lone UTF-16 surrogates, replaced by U+FFFD) and were treated as missing: "
            f"{h.malformed_values or {}}.",
        )
    if not h.profiler_steps and has_cpu_ops:
        yield _warning(
            "no_profiler_steps",
            "info",
            "No ProfilerStep annotations: the trace cannot be split per iteration. Call "
            "prof.step() once per training or inference step.",
        )


# The order here is the order the warnings are listed in (most severe first).
_CHECKS = (
    _coverage_warnings,
    _placement_warnings,
    _graph_warnings,
    _host_warnings,
    _reading_warnings,
)
