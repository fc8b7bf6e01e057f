"""Fuzz the engine with damaged copies of a real trace and count the outcomes.

Each case is one seed of the mutation fuzzer in devkit/badinput/fuzz.py (the same one the test
suite runs on the synthetic sample): the trace is damaged, written as .json or .json.gz and
run through inspect, open_trace + build_report + write_perf_report and model identification.
Outcomes: refused (a TraceError), loaded (finite results, shares within [0, 100]) or crash.
A crash is printed with its seed; replay it with `--seed SEED --cases 1 --keep DIR`.

Run:  python benchmarks/fuzz_traces.py [--trace PATH] [--cases 500] [--seed 0]
      [--platform NAME] [--keep DIR]
Exit status 1 when any case crashed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for devkit.badinput (not installed with the package)

from devkit.badinput.fuzz import Outcome, fuzz_case  # noqa: E402
from devkit.badinput.mutations import Base  # noqa: E402
from rooflens.analyzers.perf.platforms import Platform, get_platform  # noqa: E402
from rooflens.analyzers.trace.health import assess  # noqa: E402
from rooflens.analyzers.trace.open_trace import open_trace  # noqa: E402

DEFAULT_TRACE = REPO.parent / "shared/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"


def platform_for(trace: Path, name: str | None) -> Platform | None:
    if name:
        return get_platform(name)
    suggested = assess(open_trace(trace)).gpu.suggested_platform
    return get_platform(suggested) if suggested else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", type=Path, default=DEFAULT_TRACE, help="the valid trace to damage")
    ap.add_argument("--cases", type=int, default=500, help="number of cases (default 500)")
    ap.add_argument("--seed", type=int, default=0, help="first seed; cases use seed..seed+N-1")
    ap.add_argument("--platform", help="platform to score against (default: the trace's GPU)")
    ap.add_argument("--keep", type=Path, help="keep the damaged traces and reports here")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)

    base = Base.from_file(args.trace)
    platform = platform_for(args.trace, args.platform)
    work = args.keep or Path(tempfile.mkdtemp(prefix="fuzz_traces_"))
    print(f"trace: {args.trace} ({len(base.doc['traceEvents']):,} events)")
    print(f"platform: {platform.name if platform else 'none'}; seeds {args.seed}.."
          f"{args.seed + args.cases - 1}; work folder {work}\n")  # fmt: skip
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    try:
        for seed in range(args.seed, args.seed + args.cases):
            folder = work / f"case_{seed}"
            outcome = fuzz_case(base, seed, folder, platform)
            outcomes.append(outcome)
            if outcome.kind == "crash":
                print(f"CRASH seed {seed} {'+'.join(outcome.mutations)}: {outcome.detail}")
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    seconds = time.perf_counter() - started
    report(outcomes, seconds)
    return 1 if any(o.kind == "crash" for o in outcomes) else 0


def report(outcomes: list[Outcome], seconds: float) -> None:
    kinds = Counter(o.kind for o in outcomes)
    each = seconds / max(len(outcomes), 1)
    print(f"\n{len(outcomes)} cases in {seconds:.1f} s ({each:.2f} s each)")
    for kind in ("loaded", "refused", "crash"):
        print(f"  {kind:8} {kinds.get(kind, 0):5}")
    print("\nby mutation (cases using it: loaded / refused / crash)")
    per: dict[str, Counter[str]] = {}
    for o in outcomes:
        for name in set(o.mutations):
            per.setdefault(name, Counter())[o.kind] += 1
    for name, c in sorted(per.items()):
        print(f"  {name:16} {c['loaded']:5} / {c['refused']:5} / {c['crash']:3}")
    reasons = Counter(_reason(o.detail) for o in outcomes if o.kind == "refused")
    print("\nmost common refusals")
    for reason, n in reasons.most_common(12):
        print(f"  {n:5}  {reason}")


def _reason(problem: str) -> str:
    """A refusal without its numbers, so equal problems group together."""
    return "".join("N" if ch.isdigit() else ch for ch in problem)[:90]


if __name__ == "__main__":
    sys.exit(main())
