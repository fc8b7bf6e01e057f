"""Benchmark whole `rooflens` commands against a bare `json.load` of the same trace.

What is measured: whole processes, start-up and exit included, timed from outside (wall clock
around spawn and reap) with the child's peak RSS from `wait4` (ru_maxrss). The yardstick is
`python -c 'import json,gzip; json.load(gzip.open(F))'` (`open` for a plain .json file) on the
same file. Runs alternate (yardstick, then each command, round after round) so drift in the
machine's speed hits both sides; each figure is the minimum over the rounds (--runs, >= 3).

Before timing, the package is byte-compiled (compileall, as an install does) and every
command runs once untimed, so no round pays for a cold page cache or a stale bytecode cache.

Files: the trace (default: the OWLv2 H100 trace of ../shared/traces, 55.6 MB of JSON) as it
is, and inflations of it made in a temporary folder (never in the repository): its
`traceEvents` repeated N times (default 4 and 16), each copy shifted in time past the
previous one with every id made unique (bench_load.py's `write_inflated`), written as plain
JSON. The 16x file is about 575 MB.

Targets checked: on the trace itself `analyze` <= 3x, `report` <= 2x, `inspect`
<= 1.3x the yardstick and `rooflens --help` <= 0.3 s; on the largest inflation `analyze`
<= 1.0x with peak RSS <= 0.5x the yardstick's; from the smallest to the largest inflation
`analyze` time grows no faster than the factor (linear or better).

Run:  python benchmarks/bench_commands.py [--trace PATH] [--factors 4,16] [--runs 3]
      [--platform H100_SXM] [--workdir DIR] [--keep] [--check (exit 1 when a target is missed)]
The `rooflens` command is the one beside this Python (the venv's), else on PATH.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_TRACE = (
    HERE.parents[1] / "shared/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz"
)
MB = 1e6


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mb: float
    code: int


def run(cmd: list[str]) -> Run:
    """One whole process: wall time from spawn to reap, and its own peak RSS."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(seconds, usage.ru_maxrss * 1024 / MB, proc.returncode)


def yardstick(trace: Path) -> list[str]:
    opener = "gzip.open" if trace.name.endswith(".gz") else "open"
    code = f"import json,gzip; json.load({opener}({str(trace)!r}))"
    return [sys.executable, "-c", code]


def rooflens() -> str:
    beside = Path(sys.executable).parent / "rooflens"
    found = str(beside) if beside.exists() else shutil.which("rooflens")
    if not found:
        sys.exit("no `rooflens` command: install the package (pip install -e .)")
    return found


def commands(trace: Path, out: Path, platform: str, names: list[str]) -> dict[str, list[str]]:
    exe = rooflens()
    every = {
        "analyze": [exe, "analyze", str(trace), "--platform", platform, "--out", str(out)],
        "report": [exe, "report", str(trace), "--platform", platform, "--out", str(out)],
        "inspect": [exe, "inspect", str(trace)],
        "--help": [exe, "--help"],
    }
    return {name: every[name] for name in names}


def warm_up(exe: str) -> None:
    """Byte-compile the package (as an install does: a stale or missing cache would make
    every run recompile the sources) and run the command once, untimed."""
    folders = [HERE.parent / d for d in ("analyzers", "server", "resources", "prompts", "entry")]
    present = [str(f) for f in folders if f.is_dir()]
    if present:
        subprocess.run([sys.executable, "-m", "compileall", "-q", *present], check=False,
                       stdout=subprocess.DEVNULL)  # fmt: skip
    run([exe, "--version"])


def measure(trace: Path, names: list[str], args: argparse.Namespace) -> dict[str, list[Run]]:
    """Alternated rounds: the yardstick, then each command; the output folder is removed
    before every run (outside the timing)."""
    out = Path(args.workdir) / "out"
    cmds = {"json.load": yardstick(trace), **commands(trace, out, args.platform, names)}
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    for cmd in cmds.values():  # untimed: the file into the page cache, caches written
        run(cmd)
    for round_ in range(args.runs):
        for name, cmd in cmds.items():
            shutil.rmtree(out, ignore_errors=True)
            result = run(cmd)
            if result.code != 0:
                sys.exit(f"{name} failed (exit {result.code}): {' '.join(cmd)}")
            runs[name].append(result)
        line = ", ".join(f"{n} {r[-1].seconds:.2f} s" for n, r in runs.items())
        print(f"  round {round_ + 1}: {line}", flush=True)
    shutil.rmtree(out, ignore_errors=True)
    return runs


def inflate(trace: Path, factor: int, dest: Path) -> None:
    """Write the inflated copy in a child process, so this one stays small (a child's peak
    RSS can never read below its parent's at spawn)."""
    code = (
        "import gzip, json, sys; sys.path.insert(0, sys.argv[1]); "
        "from pathlib import Path; from bench_load import write_inflated; "
        "p = sys.argv[2]; base = json.load(gzip.open(p) if p.endswith('.gz') else open(p)); "
        "write_inflated(base, int(sys.argv[3]), Path(sys.argv[4]))"
    )
    subprocess.run([sys.executable, "-c", code, str(HERE), str(trace), str(factor), str(dest)],
                   check=True)  # fmt: skip


def json_mb(trace: Path) -> float:
    if trace.name.endswith(".gz"):
        with gzip.open(trace) as f:
            return sum(len(chunk) for chunk in iter(lambda: f.read(1 << 24), b"")) / MB
    return trace.stat().st_size / MB


def best(runs: list[Run]) -> Run:
    """The fastest time and the largest peak of the rounds."""
    return Run(min(r.seconds for r in runs), max(r.peak_mb for r in runs), 0)


@dataclass(frozen=True)
class Row:
    label: str
    factor: int
    json_mb: float
    name: str
    run: Run
    base: Run

    @property
    def ratio(self) -> float:
        return self.run.seconds / self.base.seconds

    @property
    def peak_ratio(self) -> float:
        return self.run.peak_mb / self.base.peak_mb


def table(rows: list[Row]) -> None:
    print(f"\n{'file':<14}{'JSON MB':>9}  {'command':<10}{'seconds':>9}{'x json':>8}"
          f"{'peak MB':>9}{'x json':>8}")  # fmt: skip
    for r in rows:
        ratio = "" if r.name == "--help" else f"{r.ratio:.2f}"
        peak = "" if r.name == "--help" else f"{r.peak_ratio:.2f}"
        print(f"{r.label:<14}{r.json_mb:>9.1f}  {r.name:<10}{r.run.seconds:>9.2f}{ratio:>8}"
              f"{r.run.peak_mb:>9.0f}{peak:>8}")  # fmt: skip


def checks(rows: list[Row]) -> list[tuple[str, bool, str]]:
    """(target, met, measured) for the targets that these rows can answer."""
    one = {r.name: r for r in rows if r.factor == 1}
    out = []
    for name, limit in (("analyze", 3.0), ("report", 2.0), ("inspect", 1.3)):
        if name in one:
            r = one[name]
            out.append((f"x1 {name} <= {limit}x json.load", r.ratio <= limit, f"{r.ratio:.2f}x"))
    if "--help" in one:
        s = one["--help"].run.seconds
        out.append(("rooflens --help <= 0.3 s", s <= 0.3, f"{s:.3f} s"))
    inflated = sorted((r for r in rows if r.factor > 1 and r.name == "analyze"),
                      key=lambda r: r.factor)  # fmt: skip
    if inflated:
        top = inflated[-1]
        out.append((f"x{top.factor} analyze <= 1.0x json.load", top.ratio <= 1.0,
                    f"{top.ratio:.2f}x"))  # fmt: skip
        out.append((f"x{top.factor} analyze peak RSS <= 0.5x json.load's",
                    top.peak_ratio <= 0.5, f"{top.peak_ratio:.2f}x"))  # fmt: skip
    if len(inflated) >= 2:
        lo, hi = inflated[0], inflated[-1]
        scale = hi.factor / lo.factor
        growth = hi.run.seconds / lo.run.seconds
        out.append((f"analyze x{lo.factor} -> x{hi.factor}: time grows <= {scale:g}x",
                    growth <= scale, f"{growth:.2f}x"))  # fmt: skip
    return out


def bench_file(trace: Path, factor: int, names: list[str], args) -> list[Row]:
    label = f"x{factor}" if factor > 1 else "x1 (as given)"
    size = json_mb(trace)
    print(f"{label}: {trace.name}, {size:.1f} MB of JSON", flush=True)
    runs = measure(trace, names, args)
    base = best(runs.pop("json.load"))
    rows = [Row(label, factor, size, "json.load", base, base)]
    return rows + [Row(label, factor, size, n, best(r), base) for n, r in runs.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--factors", default="4,16", help="inflations to build ('' for none)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--platform", default="H100_SXM")
    parser.add_argument("--workdir", help="where inflated traces and outputs go (default: tmp)")
    parser.add_argument("--keep", action="store_true", help="keep the workdir")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if args.runs < 3:
        parser.error("--runs must be at least 3 (the figures are minima over the rounds)")
    trace = Path(args.trace)
    if not trace.is_file():
        sys.exit(f"no trace at {trace}; pass --trace PATH")
    made = args.workdir is None
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="rooflens-bench-")
    warm_up(rooflens())
    try:
        rows = bench_file(trace, 1, ["analyze", "report", "inspect", "--help"], args)
        for factor in [int(f) for f in args.factors.split(",") if f.strip()]:
            inflated = Path(args.workdir) / f"{trace.name.split('.')[0]}_x{factor}.json"
            if not inflated.exists():
                print(f"writing the x{factor} inflation to {inflated}", flush=True)
                inflate(trace, factor, inflated)
            rows += bench_file(inflated, factor, ["analyze"], args)
    finally:
        if made and not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)
    table(rows)
    print()
    results = checks(rows)
    for target, met, value in results:
        print(f"{'ok    ' if met else 'MISSED'}  {target}: {value}")
    return 1 if args.check and not all(met for _, met, _ in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
