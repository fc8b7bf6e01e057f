"""Benchmark `rooflens compare` against two `rooflens analyze` runs of the same traces.

What is measured: whole processes (bench_commands.py's `run`: wall clock around spawn and
reap, peak RSS from `wait4`). One round is `analyze TRACE1`, `analyze TRACE2`, then
`compare TRACE1 TRACE2`, each into a fresh folder; rounds alternate so machine drift hits
both sides, and each figure is the minimum over the rounds (--runs, >= 3). The package is
byte-compiled and every command runs once untimed first.

Default pair: the OWLv2 traces of ../shared/traces (MI300X trace 1, H100 trace 2), each on
its own platform. `--generated wide` writes a pair whose 20,000 operators are siblings under
one profiler step, `--generated nested` the same under 26 parent spans (a recommendation
model's embedding tables), both about 100k events, names from a vocabulary of ten and an edit
every 500 operators (analyzers/synthetic/wide.py), on H100. Target: `compare` <= 2x the two
`analyze` runs together.

Run:  python benchmarks/bench_compare.py [--trace1 PATH] [--trace2 PATH] [--platform MI300X]
      [--platform2 H100_SXM] [--generated wide|nested] [--runs 3]
      [--check (exit 1 when the target is missed)]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from bench_commands import Run, rooflens, run, warm_up

from rooflens.analyzers.synthetic.wide import WidePlan, write_wide_pair

HERE = Path(__file__).resolve().parent
MODEL = "google_owlv2-large-patch14-ensemble__1016001.json.gz"
SHARED = HERE.parents[1] / "shared/traces"
TARGET = 2.0  # compare / (analyze trace 1 + analyze trace 2)
GENERATED = {"wide": WidePlan(ops=20_000), "nested": WidePlan(ops=20_000, parents=26)}


def commands(args: argparse.Namespace, out: Path) -> dict[str, list[str]]:
    exe = rooflens()
    return {
        "analyze 1": [exe, "analyze", args.trace1, "--platform", args.platform,
                      "--out", str(out / "one")],
        "analyze 2": [exe, "analyze", args.trace2, "--platform", args.platform2,
                      "--out", str(out / "two")],
        "compare": [exe, "compare", args.trace1, args.trace2, "--platform", args.platform,
                    "--platform2", args.platform2, "--out", str(out / "both")],
    }  # fmt: skip


def measure(args: argparse.Namespace, out: Path) -> dict[str, list[Run]]:
    cmds = commands(args, out)
    for cmd in cmds.values():  # untimed: page cache and bytecode warm
        run(cmd)
    timed: dict[str, list[Run]] = {name: [] for name in cmds}
    for _ in range(args.runs):
        shutil.rmtree(out, ignore_errors=True)
        for name, cmd in cmds.items():
            result = run(cmd)
            if result.code != 0:
                sys.exit(f"{name} exited {result.code}: {' '.join(cmd)}")
            timed[name].append(result)
    return timed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace1", default=str(SHARED / "mi300" / MODEL))
    parser.add_argument("--trace2", default=str(SHARED / "h100" / MODEL))
    parser.add_argument("--platform", default="MI300X")
    parser.add_argument("--platform2", default="H100_SXM")
    parser.add_argument("--generated", choices=sorted(GENERATED), default=None)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    args = parser.parse_args(argv)
    if args.runs < 3:
        parser.error("--runs must be at least 3 (the figures are minima over the rounds)")
    written = Path(tempfile.mkdtemp(prefix="rooflens-bench-pair-"))
    try:
        if args.generated:
            args.trace1, args.trace2 = map(str, write_wide_pair(written, GENERATED[args.generated]))
            args.platform = args.platform2 = "H100_SXM"
        return _bench(args)
    finally:
        shutil.rmtree(written, ignore_errors=True)


def _bench(args: argparse.Namespace) -> int:
    for trace in (args.trace1, args.trace2):
        if not Path(trace).is_file():
            sys.exit(f"no trace at {trace}; pass --trace1/--trace2")
    warm_up(rooflens())
    out = Path(tempfile.mkdtemp(prefix="rooflens-bench-compare-"))
    try:
        timed = measure(args, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    best = {name: min(runs, key=lambda r: r.seconds) for name, runs in timed.items()}
    for name, r in best.items():
        print(f"{name:<10} {r.seconds:7.2f} s  peak {r.peak_mb:7.0f} MB")
    both = best["analyze 1"].seconds + best["analyze 2"].seconds
    ratio = best["compare"].seconds / both
    verdict = "ok" if ratio <= TARGET else "MISSED"
    print(f"compare / (analyze 1 + analyze 2) = {ratio:.2f} (target <= {TARGET:g}): {verdict}")
    return 1 if args.check and ratio > TARGET else 0


if __name__ == "__main__":
    raise SystemExit(main())
