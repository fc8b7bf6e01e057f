"""`rooflens report` and `rooflens platforms`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TextIO

from rooflens.analyzers.categories.run import analyze_run
from rooflens.analyzers.findings.drafts import write_draft
from rooflens.analyzers.findings.model_info import write_model_identification
from rooflens.analyzers.findings.plot import render_plot
from rooflens.analyzers.findings.priorities import generate_priority_data, write_priority_data
from rooflens.analyzers.findings.report import write_report as write_analysis
from rooflens.analyzers.perf.categories import CategoryFileError, load_table
from rooflens.analyzers.perf.platform_choice import choose_platform
from rooflens.analyzers.perf.platforms import PlatformFileError, UnknownPlatform, platform_table
from rooflens.analyzers.prepare.run import prepare_run
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage, write_report
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.open_trace import AUTO, open_trace

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def capture_choice(args: argparse.Namespace) -> str | None:
    """`open_trace`'s `captures` argument from --capture-folder / --no-captures."""
    if args.no_captures:
        return None
    return args.capture_folder or AUTO


def run_report(args: argparse.Namespace, *, prepare: bool = False, analyse: bool = False) -> int:
    try:
        categories = load_table(args.categories)
        model = open_trace(args.trace, captures=capture_choice(args))
        health = assess(model)
        platform, source = choose_platform(args.platform, args.platform_file, health.gpu)
    except (TraceError, PlatformFileError, UnknownPlatform, CategoryFileError) as exc:
        print(f"rooflens: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if prepare and platform is None:
        print(
            f"rooflens: category data needs a platform and {source}; pass --platform NAME "
            "(see `rooflens platforms`) or --platform-file PATH",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    report = build_report(model, platform, categories=categories)
    files = write_report(report, Path(args.out), Path(args.trace).name, health.gpu.model)
    print(f"Scored against {source}.")
    coverage = roofline_coverage(report)
    if coverage is not None:
        print(f"Kernel time with a roofline: {coverage * 100:.1f} %")
    print(f"Wrote {len(files.csvs)} tables to {files.csv_folder}/ and {files.xlsx}")
    for note in report.notes:
        print(f"Note: {note}")
    if prepare and platform is not None:
        manifest = prepare_run(model, report, platform, Path(args.out), str(args.trace))
        names = ", ".join(c.name for c in manifest.categories)
        print(
            f"Prepared {len(manifest.categories)} categories in {args.out}/category_data/: {names}"
        )
    if prepare and analyse:
        for result in analyze_run(Path(args.out)):
            found = f", {result.findings} findings" if result.findings else ""
            draft = write_draft(Path(args.out), result.key)
            print(f"  {result.key}: {result.status}{found} -> {draft.relative_to(args.out)}")
        priorities = generate_priority_data(Path(args.out))
        write_priority_data(Path(args.out), priorities)
        print("Priorities (estimated saving, % of end-to-end GPU time):")
        for row in priorities.priorities:
            score = row.impact_score
            shown = "no estimate" if score is None else f"{score:.2f} %"
            print(f"  {row.rank}. {row.display_name}: {shown}")
        identity = write_model_identification(Path(args.out))
        model_name = identity.model if identity else "Unidentified model"
        plot = render_plot(
            Path(args.out), f"{model_name} on {platform.name} — Performance Breakdown"
        )
        if identity is None:
            print("Model: not identified (the trace records no operators)")
        else:
            print(f"Model: {identity.model} ({identity.scale}, {identity.precision})")
        print(f"Plot: {plot.path}" if plot.path else f"No plot: {plot.reason}")
        print(f"Report: {write_analysis(Path(args.out))}")
    return EXIT_OK


def list_platforms(out: TextIO) -> int:
    rows = platform_table()
    out.write(f"{'name':<11}{'vendor':<8}{'memory GB':>10}{'HBM GB/s':>10}")
    out.write(f"{'bf16 TFLOPS':>13}{'fp8 TFLOPS':>12}  figures\n")
    for r in rows:
        bf16 = "-" if r.matrix_bf16_tflops is None else f"{r.matrix_bf16_tflops:g}"
        fp8 = "-" if r.matrix_fp8_tflops is None else f"{r.matrix_fp8_tflops:g}"
        kind = "measured" if r.measured else "peak"
        out.write(f"{r.name:<11}{r.vendor or '':<8}{r.memory_gb or 0:>10g}{r.mem_bw_gbps:>10g}")
        out.write(f"{bf16:>13}{fp8:>12}  {kind}\n")
    return EXIT_OK
