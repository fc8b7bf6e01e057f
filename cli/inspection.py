"""`rooflens inspect`: a trace's health and GPU timeline, as a table or one JSON object."""

from __future__ import annotations

import sys
from typing import TextIO

from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import Inspection, TimelineRow, inspect_trace

from .common import EXIT_OK, fail, print_json


def run_inspect(path: str, *, as_json: bool, include_unlinked: bool, captures: str | None) -> int:
    try:
        result = inspect_trace(path, include_unlinked=include_unlinked, captures=captures)
    except TraceError as exc:
        return fail(str(exc))
    if as_json:
        print_json(result.model_dump(mode="json", by_alias=True))
    else:
        print_inspection(result, sys.stdout)
    return EXIT_OK


def _table(rows: list[TimelineRow], out: TextIO, indent: str = "  ") -> None:
    out.write(f"{indent}{'type':<22}{'time ms':>14}{'percent':>10}\n")
    for row in rows:
        out.write(f"{indent}{row.type:<22}{row.time_ms:>14.4f}{row.percent:>9.2f}%\n")


def print_inspection(result: Inspection, out: TextIO) -> None:
    """Human-readable health summary and timeline table."""
    h = result.health
    gpu = h.gpu
    platform = gpu.suggested_platform or "none (pass --platform NAME or --platform-file PATH)"
    out.write(f"Trace      {h.file}  ({h.json_mb:.1f} MB JSON, {h.events:,} events)\n")
    model = gpu.model if gpu.model.upper().startswith(gpu.vendor) else f"{gpu.vendor} {gpu.model}"
    out.write(f"GPU        {model}; devices with work: ")
    out.write(f"{', '.join(map(str, h.devices_with_gpu_events)) or 'none'}\n")
    out.write(f"Platform   suggested {platform} ({gpu.reason})\n")
    out.write(f"Execution  {h.execution}; graph launches {h.graph_launches}\n")
    if (merge := h.capture_merge) is not None:
        files = ", ".join(f"{c.file} (batch {c.batch_size}, {c.mode})" for c in merge.captures)
        out.write(
            f"Captures   {merge.merged_graph_launches} of {merge.graph_launches} graph launches "
            f"merged from {merge.folder}/: {files or 'none usable'}\n"
        )
    recorded = {
        "shapes": h.shapes_recorded,
        "python stacks": h.python_stacks_recorded,
        "module names": h.module_names_recorded,
    }
    out.write(
        "Recorded   " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in recorded.items()) + "\n"
    )
    d = h.distributed
    if d.world_size is not None or d.collective_kernels:
        out.write(
            f"Ranks      rank {d.rank} of {d.world_size} ({d.backend}); "
            f"collective kernels {d.collective_kernels}\n"
        )
    link = h.linking
    out.write(
        f"Linking    {link.linked:,} of {link.gpu_events:,} GPU events tied to a launch "
        f"(by {link.key}{', flows' if link.by_flow_events else ', ids only'})\n"
    )
    if h.profiler_steps:
        out.write(f"Steps      ProfilerStep {', '.join(map(str, h.profiler_steps))}\n")
    counts = ", ".join(f"{k} {v:,}" for k, v in h.events_by_category.items())
    out.write(f"Events     {counts}\n\n")
    scope = "all GPU events" if result.include_unlinked else "linked GPU events"
    out.write(f"GPU timeline ({scope}, all devices pooled)\n")
    _table(result.gpu_timeline, out)
    if len(result.per_device) > 1:
        for device in result.per_device:
            out.write(f"\nGPU timeline, device {device.device}\n")
            _table(device.gpu_timeline, out)
    if h.warnings:
        out.write("\nWarnings\n")
        for w in h.warnings:
            out.write(f"  [{w.severity}] {w.message}\n")
