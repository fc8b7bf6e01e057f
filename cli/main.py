"""The `rooflens` command line: the engine without any LLM.

This module only parses arguments and dispatches; each command's module is imported when that
command runs, so `rooflens --help` stays fast (no pandas, matplotlib, openpyxl or MCP SDK).
The command modules print and choose exit codes; the engine raises.

Exit codes: 0 ok; 1 `validate` found problems (or the demo's report did not validate);
2 bad input (unreadable trace, bad platform, refused or unwritable --out, usage); 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import rooflens

from .common import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    capture_choice,
    fail,
)
from .completion import add_completion_parser
from .config_command import add_config_parser
from .global_options import add_global_options
from .serve import add_serve_parser

EPILOG = (
    "exit codes: 0 ok; 1 validation failed; 2 bad input (unreadable trace, bad platform, "
    "refused or unwritable --out); 130 interrupted; 141 stdout closed early. "
    "New here? Run `rooflens demo`."
)


class _Version(argparse.Action):
    """--version, reading the installed version (importlib.metadata) only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        sys.stdout.write(f"rooflens {rooflens.__version__}\n")
        parser.exit()


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


def _json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of text"
    )


def _report_arguments(parser: argparse.ArgumentParser, *, out_help: str) -> None:
    """Arguments shared by `report` and `analyze`: the trace, its platform, the output."""
    parser.add_argument("trace", help="path to a .json or .json.gz PyTorch profiler trace")
    _capture_arguments(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--platform", help="platform name from `rooflens platforms`")
    where.add_argument("--platform-file", help="a platform JSON file (ours or TraceLens's)")
    parser.add_argument("--out", required=True, help=out_help)
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace the run of another trace that --out holds (a folder holding anything "
        "else is always refused)",
    )
    parser.add_argument("--categories", help="TOML file adding ops or categories")
    _raw_csv_argument(parser)
    _json_argument(parser)


def _format_argument(parser: argparse.ArgumentParser, folder: str) -> None:
    parser.add_argument(
        "--format",
        choices=["csv", "parquet"],
        default="csv",
        help=f"tables as CSV (default), or parquet: each table also as typed Parquet in "
        f"DIR/{folder} (needs the parquet extra: pip install 'rooflens[parquet]')",
    )


def _raw_csv_argument(parser: argparse.ArgumentParser) -> None:
    """How the run's tables are written: CSV cells escaped or raw, and Parquet too."""
    _format_argument(parser, "perf_report_parquet/")
    parser.add_argument(
        "--raw-csv",
        action="store_true",
        help="write text cells of the CSV tables as they are; by default a cell starting with "
        "=, +, -, @, tab or CR gets a leading ' so spreadsheets do not run it as a formula "
        "(run.json records which)",
    )


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser; every command's module loads only when that command runs."""
    parser = argparse.ArgumentParser(
        prog="rooflens",
        description="Explain where GPU time goes in a PyTorch profiler trace.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action=_Version, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="analyse a sample (or given) trace end to end over MCP")
    demo.add_argument(
        "trace", nargs="?", default=None, help="a .json/.json.gz trace (default: a sample)"
    )
    demo.add_argument(
        "--out", help="folder to write into (default: a new temporary folder, printed)"
    )
    _add_inspect(commands)
    _add_report_and_analyze(commands)
    _add_compare(commands)
    _add_baseline(commands)
    _add_analyze_job(commands)
    _add_validate(commands)
    _add_what_if(commands)
    add_serve_parser(commands)
    commands.add_parser("platforms", help="list the GPU platform catalogue")
    add_config_parser(commands)
    add_completion_parser(commands)
    add_global_options(parser, commands)  # last: every command gets -v, --log-level, --config
    return parser


def _add_inspect(commands: argparse._SubParsersAction) -> None:
    """`inspect`: health and GPU timeline of one trace, no output folder."""
    inspect = commands.add_parser(
        "inspect",
        help="trace health and GPU timeline of one trace",
        description="Load a Kineto trace (.json or .json.gz), report what it recorded and "
        "where the GPU's time went (computation, exposed communication and memcpy, idle).",
    )
    inspect.add_argument("trace", help="path to a .json or .json.gz PyTorch profiler trace")
    _json_argument(inspect)
    inspect.add_argument(
        "--include-unlinked",
        action="store_true",
        help="count GPU events that have no host launch in the timeline too",
    )
    _capture_arguments(inspect)


def _add_report_and_analyze(commands: argparse._SubParsersAction) -> None:
    """`report` (perf report only) and `analyze` (the whole pipeline) into a run folder."""
    report = commands.add_parser(
        "report",
        help="write the perf report (CSV folder and XLSX) of one trace",
        description="Per-operation GPU time, FLOPs, bytes and roofline efficiency, in "
        "TraceLens's tables: DIR/perf_report_csvs/*.csv and DIR/perf_report.xlsx. The run is "
        "built beside DIR and swapped into place when complete; DIR/run.json records it.",
    )
    _report_arguments(report, out_help="output folder")
    analyze = commands.add_parser(
        "analyze",
        help="perf report, category data and every category analysis",
        description="Write the perf report, prepare the run folder (category_data/, "
        "metadata/), run every category analysis of its manifest, draft the findings and "
        "compose analysis.md. The run is built beside DIR and swapped into place when "
        "complete; DIR/run.json records the trace and every artifact.",
    )
    _report_arguments(analyze, out_help="run folder")
    analyze.add_argument(
        "--until",
        choices=UNTIL,
        default="reported",
        help="the last step of the pipeline to run (default: all of them, to the report)",
    )
    analyze.add_argument(
        "--no-annotated-trace",
        action="store_true",
        help="do not write annotated_trace.json.gz (the trace with the findings' tracks, "
        "for Perfetto; docs/trace-viewer.md)",
    )


def _add_analyze_job(commands: argparse._SubParsersAction) -> None:
    """`analyze-job`: every rank of a distributed job, on Dask, then the job together."""
    job = commands.add_parser(
        "analyze-job",
        help="analyse every rank of a distributed job in parallel (Dask) and match them",
        description="Analyse each rank's trace as a Dask task (an embedded cluster of worker "
        "processes, or --scheduler), then match the collectives across ranks: waits, skews "
        "and the straggler. Writes DIR/job.json, DIR/job_tables/ and one run folder per rank "
        "under DIR/ranks/; built beside DIR and swapped into place when complete.",
    )
    job.add_argument(
        "traces",
        nargs="+",
        help="the ranks' traces: files, folders or quoted globs ('DIR/*.json.gz')",
    )
    job.add_argument("--out", required=True, help="job folder")
    job.add_argument(
        "--rank-regex",
        help="regular expression whose first group (or group 'rank') is the rank in a file "
        "name, for traces without distributedInfo (default: rank3, rank_3, worker3, proc3)",
    )
    job.add_argument(
        "--scheduler",
        help="address of a running Dask scheduler (tls://host:8786 or tcp://host:8786; "
        "default: $DASK_SCHEDULER_ADDRESS, else an embedded cluster on this machine that "
        "only this process can use). A tls:// scheduler's CA, client certificate and key "
        "come from Dask's configuration: DASK_DISTRIBUTED__COMM__TLS__CA_FILE, "
        "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT, DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY; "
        "an address off this machine without TLS is warned about",
    )
    job.add_argument(
        "--workers",
        type=int,
        help="worker processes of the embedded cluster (default: one per core, fewer when "
        "the ranks would not fit in memory)",
    )
    job.add_argument("--platform", help="platform name from `rooflens platforms`")
    job.add_argument(
        "--until",
        choices=["none", "loaded", *UNTIL],
        default="reported",
        help="the last pipeline step of each rank's own run folder (default: reported, its "
        "analysis.md; none: summaries only, no per-rank folders)",
    )
    job.add_argument(
        "--force", action="store_true", help="replace the job of other traces that --out holds"
    )
    _format_argument(job, "job_tables_parquet/")
    _json_argument(job)


UNTIL = ["prepared", "analysed", "drafted", "aggregated", "reported"]


def _add_compare(commands: argparse._SubParsersAction) -> None:
    """`compare`: `analyze` of trace 1 with trace 2 set against it."""
    compare = commands.add_parser(
        "compare",
        help="analyse TRACE1 against TRACE2 (another GPU, library version or code change)",
        description="Analyse TRACE1 (the run being optimised) with TRACE2 (the reference) "
        "set against it: each trace's perf report on its own platform, the two call trees "
        "merged (perf_report_trace1_csvs/diff_stats.csv), trace 1's tables with trace 2's "
        "time beside each operator, and every category scored against trace 2's time. "
        "Written like `analyze`: built beside DIR, swapped into place when complete.",
    )
    compare.add_argument("trace", metavar="TRACE1", help="the trace being optimised")
    compare.add_argument(
        "trace2",
        metavar="TRACE2",
        nargs="?",
        help="the reference trace to compare with (or --baseline NAME)",
    )
    compare.add_argument(
        "--baseline",
        metavar="NAME",
        help="compare with the baseline saved as NAME (`rooflens baseline save`) instead of TRACE2",
    )
    _baselines_argument(compare)
    where = compare.add_mutually_exclusive_group()
    where.add_argument("--platform", help="trace 1's platform name (`rooflens platforms`)")
    where.add_argument("--platform-file", help="trace 1's platform JSON file")
    where2 = compare.add_mutually_exclusive_group()
    where2.add_argument("--platform2", help="trace 2's platform name (`rooflens platforms`)")
    where2.add_argument("--platform2-file", help="trace 2's platform JSON file")
    compare.add_argument(
        "--capture-folder",
        help="trace 1's graph-capture traces (default: a 'capture_traces' folder beside it)",
    )
    compare.add_argument(
        "--capture-folder2",
        help="trace 2's graph-capture traces (default: a 'capture_traces' folder beside it)",
    )
    compare.add_argument(
        "--no-captures", action="store_true", help="look for no graph-capture traces at all"
    )
    compare.add_argument("--out", required=True, help="run folder")
    compare.add_argument(
        "--force",
        action="store_true",
        help="replace the run of another trace that --out holds (a folder holding anything "
        "else is always refused)",
    )
    compare.add_argument("--categories", help="TOML file adding ops or categories")
    compare.add_argument(
        "--gate",
        type=float,
        metavar="PCT",
        help="regression gate: exit 3 when TRACE1 (the new run) is slower than TRACE2 (the "
        "baseline) by more than PCT %% beyond the noise of their steady iterations, else 0 "
        "(docs/compare.md#a-regression-gate)",
    )
    _raw_csv_argument(compare)
    compare.add_argument(
        "--until",
        choices=UNTIL,
        default="reported",
        help="the last step of the pipeline to run (default: all of them, to the report)",
    )
    _json_argument(compare)


def _baselines_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--baselines",
        metavar="DIR",
        help="folder of named baselines (default: $ROOFLENS_BASELINES, else "
        "~/.cache/rooflens/baselines)",
    )


def _add_baseline(commands: argparse._SubParsersAction) -> None:
    """`baseline save|list|remove`: named reference traces for `compare --baseline`."""
    baseline = commands.add_parser(
        "baseline",
        help="keep, list or remove named baselines for `compare --baseline NAME --gate PCT`",
        description="A baseline is a copy of a trace kept under a name, with its SHA-256 "
        "(checked at every use) and the platform its run was scored against "
        "(docs/compare.md#named-baselines).",
    )
    actions = baseline.add_subparsers(dest="action", required=True, metavar="ACTION")
    save = actions.add_parser("save", help="keep a trace (or a run folder's trace) as NAME")
    save.add_argument("name", metavar="NAME", help="letters, digits, '.', '_', '-'")
    save.add_argument("source", metavar="RUN", help="a run folder written by rooflens, or a trace")
    save.add_argument("--force", action="store_true", help="replace a baseline of that name")
    listing = actions.add_parser("list", help="the saved baselines")
    remove = actions.add_parser("remove", help="delete a baseline")
    remove.add_argument("name", metavar="NAME")
    for action in (save, listing, remove):
        _baselines_argument(action)
        _json_argument(action)


def _add_validate(commands: argparse._SubParsersAction) -> None:
    """`validate`: every validator over a finished run folder."""
    validate = commands.add_parser(
        "validate",
        help="run every validator over a run folder (exit 0 only when all pass)",
        description="Check that the folder is one run's complete, unmodified output (run.json "
        "ledger), then validate its findings, report and numbers. Exit 0: all pass; 1: some "
        "check failed; 2: not a run folder.",
    )
    validate.add_argument("run", help="a run folder written by `rooflens analyze`")
    _json_argument(validate)


def _add_what_if(commands: argparse._SubParsersAction) -> None:
    """`what-if`: the trace replayed, its critical path, the step after each change."""
    what = commands.add_parser(
        "what-if",
        help="replay a trace: its critical path and the step time after a change",
        description="Replay the trace of a run (or a trace file) from its recorded durations: "
        "the identity replay error, the critical path of the median iteration, and the step "
        "time predicted after each --change and after all of them together (docs/what-if.md). "
        "Several targets are the ranks of one job, replayed together: a collective ends when "
        "the last rank arrives.",
    )
    what.add_argument(
        "target",
        nargs="+",
        help="a run folder written by `rooflens analyze`, or a trace; several: one per rank",
    )
    what.add_argument(
        "--change",
        action="append",
        default=[],
        metavar="SPEC",
        help="KIND:PATTERN=FACTOR, repeatable: gpu:NAME_PART=0.5 (kernels twice as fast), "
        "op:aten::mm=0.5 (an operator's kernels), host:DataLoader=0 (host spans removed), "
        "async:aten::to=0.5 (a blocking copy made async, twice as fast), graph:Layer=0 "
        "(launch overhead removed over a region), overlap:AllReduce=0 (a collective "
        "overlapped), or warmup (the warm-up iterations dropped); in a job, rankN@SPEC "
        "changes rank N only",
    )
    _json_argument(what)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "inspect":
        from .inspection import run_inspect

        return run_inspect(
            args.trace,
            as_json=args.json,
            include_unlinked=args.include_unlinked,
            captures=capture_choice(args),
        )
    if args.command in ("report", "analyze"):
        from .trace_read import TraceRead

        read = TraceRead(Path(args.trace))  # reads on threads while the engine is imported
        from .analyze import run_report

        if args.command == "report":
            return run_report(args, prefetched=read)
        return run_report(args, until=args.until, prefetched=read)
    if args.command == "what-if":
        from .what_if import run_what_if

        return run_what_if(args.target, args.change, as_json=args.json)
    if args.command == "analyze-job":
        from .job import run_job

        return run_job(args)

    if args.command == "compare":
        return _compare(args)
    if args.command == "baseline":
        from .baseline import run_baseline

        return run_baseline(args)
    if args.command == "validate":
        from .validate import run_validate

        return run_validate(args.run, as_json=args.json)
    if args.command == "demo":
        from .demo import run_demo

        return run_demo(args.trace, args.out)
    if args.command == "serve":
        from .serve import run_serve

        return run_serve(args)
    if args.command == "platforms":
        from .analyze import list_platforms

        return list_platforms(sys.stdout)
    raise AssertionError(f"unhandled command {args.command}")  # argparse enforces the choice


def _compare(args: argparse.Namespace) -> int:
    from .common import fail
    from .trace_read import TraceRead

    if args.no_captures and (args.capture_folder or args.capture_folder2):
        return fail("--no-captures cannot be combined with --capture-folder/--capture-folder2")
    if (args.trace2 is None) == (args.baseline is None):
        return fail("compare needs TRACE2 or --baseline NAME (one of them)")
    if args.baseline is not None:
        from .baseline import use_baseline

        problem = use_baseline(args)
        if problem is not None:
            return fail(problem)
    read, read2 = TraceRead(Path(args.trace)), TraceRead(Path(args.trace2))
    from .compare import run_compare

    return run_compare(args, prefetched=read, prefetched2=read2)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _configured_run(argv)
    except KeyboardInterrupt:
        print("rooflens: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`rooflens platforms | head`): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _configured_run(argv: list[str]) -> int:
    """Parse with the config file's values as defaults, set up logging, dispatch."""
    from . import config, config_defaults
    from .global_options import prescan
    from .logging_setup import BadLevel, configure, level_name

    early = prescan(argv)
    found = config.load_or_fail(early.config, early.no_config)
    if isinstance(found, int):
        return found
    parser = build_parser(argv)
    try:
        config_defaults.install(parser, found)
    except config.ConfigError as exc:
        return fail(str(exc))
    args = parser.parse_args(argv)
    config_defaults.resolve(parser, args, found)
    try:
        level = level_name(args.verbose or 0, config_defaults.log_level_of(args, found))
    except BadLevel as exc:
        return fail(str(exc))
    configure(level)
    if args.command == "config":
        from .config_command import run_config

        return run_config(args, found, level)
    if args.command == "completion":
        from .completion import run_completion

        return run_completion(args.shell, build_parser())
    return _dispatch(args)


if __name__ == "__main__":
    raise SystemExit(main())
