"""The load step every run shares (docs/run-folder.md): the trace read, its health judged, the
platform chosen, the perf report built.

The command line, the MCP server, each rank of a job, trace 2 of a comparison and the Python
API all load through `read_trace` and `load_step`; they differ only in where the bytes come
from (a checked path, text prefetched on a thread, a hash taken while reading) and where the
result goes (pipeline/sealed.py writes it into a run folder).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..perf.categories import CategoryTable
from ..perf.platform_choice import choose_platform
from ..perf.platforms import Platform
from ..trace.health import TraceHealth, assess, counters_only_message
from ..trace.model import TraceModel
from ..trace.open_trace import AUTO, CaptureChoice, open_trace
from .build import PerfReport, build_report

RUN_PLATFORM = "the run's platform"  # how a platform already resolved is described


@dataclass(frozen=True)
class Loaded:
    """One trace loaded: its model and health, the platform chosen (and how), its perf
    report."""

    model: TraceModel
    health: TraceHealth
    platform: Platform | None
    platform_source: str
    report: PerfReport


def read_trace(
    path: str | Path,
    *,
    captures: CaptureChoice = AUTO,
    allow: Callable[[Path], bool] | None = None,
    text: Callable[[], bytes | bytearray] | None = None,
    on_read: Callable[[bytes], object] | None = None,
) -> tuple[TraceModel, TraceHealth]:
    """The trace's model (graph captures merged, `open_trace`) and its health."""
    model = open_trace(path, captures=captures, allow=allow, text=text, on_read=on_read)
    return model, assess(model)


def load_step(
    model: TraceModel,
    *,
    health: TraceHealth | None = None,
    platform: str | Platform | None = None,
    platform_file: str | Path | None = None,
    categories: CategoryTable | None = None,
) -> Loaded:
    """Choose the platform (a `Platform` already resolved, a file, a catalogue name, else
    what the trace's GPU suggests) and build the perf report on it."""
    health = health or assess(model)
    if isinstance(platform, Platform):
        chosen, source = platform, RUN_PLATFORM
    else:
        chosen, source = choose_platform(platform, platform_file, health.gpu)
    report = build_report(model, chosen, categories=categories)
    return Loaded(model, health, chosen, source, report)


NO_GPU_EVENTS = (
    "the trace holds no GPU events (no kernels, copies or memsets), so there is no GPU time "
    "to analyse; profile again with the GPU activity on (torch.profiler "
    "activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], which also covers ROCm)"
)


def missing_gpu_work(model: TraceModel) -> str | None:
    """Why a trace cannot be analysed at all, or None: the analysis starts from GPU time. A
    range-profiler trace is described, not called empty (trace/range_counters.py)."""
    if len(model.gpu):
        return None
    counters = model.trace.counters
    return NO_GPU_EVENTS if counters is None else counters_only_message(counters)
