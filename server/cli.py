"""The `rooflens` command line: the engine without any LLM.

Only this module chooses exit codes and prints; the engine raises.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TextIO

from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import Inspection, TimelineRow, inspect_trace
from rooflens.server.cli_report import capture_choice, list_platforms, run_report
from rooflens.server.cli_serve import add_serve_parser, run_serve
from rooflens.server.cli_validate import run_validate
from rooflens.server.demo import run_demo

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _capture_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the graph-capture traces of a CUDA/HIP-graph replay are."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--capture-folder",
        help="folder of graph-capture traces whose operators and shapes are grafted onto "
        "the replayed graphs (default: a 'capture_traces' folder beside the trace, if any)",
    )
    group.add_argument(
        "--no-captures",
        action="store_true",
        help="do not look for graph-capture traces",
    )


def _report_arguments(parser: argparse.ArgumentParser, *, out_help: str) -> None:
    """Arguments shared by `report` and `analyze`: the trace, its platform, the output."""
    parser.add_argument("trace", help="path to a .json or .json.gz PyTorch profiler trace")
    _capture_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--platform", help="platform name from `rooflens platforms`")
    where.add_argument("--platform-file", help="a platform JSON file (ours or TraceLens's)")
    parser.add_argument("--out", required=True, help=out_help)
    parser.add_argument("--categories", help="TOML file adding ops or categories")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rooflens",
        description="Explain where GPU time goes in a PyTorch profiler trace.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = commands.add_parser(
        "inspect",
        help="trace health and GPU timeline of one trace",
        description="Load a Kineto trace (.json or .json.gz), report what it recorded and "
        "where the GPU's time went (computation, exposed communication and memcpy, idle).",
    )
    inspect.add_argument("trace", help="path to a .json or .json.gz PyTorch profiler trace")
    inspect.add_argument("--json", action="store_true", help="print one JSON object")
    inspect.add_argument(
        "--include-unlinked",
        action="store_true",
        help="count GPU events that have no host launch in the timeline too",
    )
    _capture_arguments(inspect)
    report = commands.add_parser(
        "report",
        help="write the perf report (CSV folder and XLSX) of one trace",
        description="Per-operation GPU time, FLOPs, bytes and roofline efficiency, in "
        "TraceLens's tables: DIR/perf_report_csvs/*.csv and DIR/perf_report.xlsx.",
    )
    _report_arguments(report, out_help="output folder")
    analyze = commands.add_parser(
        "analyze",
        help="perf report, category data and every category analysis",
        description="Write the perf report, prepare the run folder (category_data/, "
        "metadata/) and run every category analysis of its manifest.",
    )
    _report_arguments(analyze, out_help="run folder")
    analyze.add_argument(
        "--until",
        choices=["prepare", "categories"],
        default="categories",
        help="last step to run: prepare the category data, or also run every analysis",
    )
    validate = commands.add_parser(
        "validate",
        help="run every validator over a run folder (exit 0 only when all pass)",
    )
    validate.add_argument("run", help="a run folder written by `rooflens analyze`")
    add_serve_parser(commands)
    demo = commands.add_parser("demo", help="analyse a sample (or given) trace end to end over MCP")
    demo.add_argument(
        "trace", nargs="?", default=None, help="a .json/.json.gz trace (default: a sample)"
    )
    commands.add_parser("platforms", help="list the GPU platform catalogue")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "inspect":
        return _inspect(
            args.trace,
            as_json=args.json,
            include_unlinked=args.include_unlinked,
            captures=capture_choice(args),
        )
    if args.command == "report":
        return run_report(args)
    if args.command == "analyze":
        return run_report(args, prepare=True, analyse=args.until == "categories")
    if args.command == "demo":
        return run_demo(args.trace)
    if args.command == "serve":
        return run_serve(args)
    if args.command == "validate":
        return run_validate(args.run)
    if args.command == "platforms":
        return list_platforms(sys.stdout)
    raise AssertionError(f"unhandled command {args.command}")  # argparse enforces the choice


def _inspect(path: str, *, as_json: bool, include_unlinked: bool, captures: str | None) -> int:
    try:
        result = inspect_trace(path, include_unlinked=include_unlinked, captures=captures)
    except TraceError as exc:
        print(f"rooflens: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if as_json:
        json.dump(result.model_dump(mode="json", by_alias=True), sys.stdout, indent=2)
        sys.stdout.write("\n")
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
    platform = gpu.suggested_platform or "none (pass --platform)"
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


if __name__ == "__main__":
    raise SystemExit(main())
