"""Fuzz the engine with changed copies of real traces and count the outcomes.

Each case is one seed of the mutation fuzzer in devkit/badinput/fuzz.py (the same one the test
suite runs on the synthetic sample): the trace is changed (damaged, or re-laid-out as other
profiler versions write it), written as .json or .json.gz and run through inspect, the perf
report, model identification and every step of `rooflens analyze` into a run folder.
Outcomes: refused (a TraceError, or no GPU work to analyse), loaded (finite results, shares
within [0, 100], strict JSON, the report written), crash, or hang (over --timeout seconds;
each case runs in a worker process, replaced after a hang).

Seed s changes trace number s mod N of the N traces given (default: four small shared traces:
an NVIDIA eager BERT, an AMD ViT, one rank of an 8-rank DLRM with NCCL, an sglang decode of
graph replays). A crash is printed with its seed and trace; replay it with
`--seed SEED --cases 1 --keep DIR` and the same --trace list.

Run:  python benchmarks/fuzz_traces.py [--trace PATH ...] [--cases 1000] [--seed 0]
      [--mutations all|layout|damage] [--timeout 60] [--platform NAME] [--keep DIR]
Exit status 1 when any case crashed or hung.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for devkit.badinput (not installed with the package)

from devkit.badinput.fuzz import (  # noqa: E402
    ALL_MUTATIONS,
    Mutation,
    Outcome,
    fuzz_case,
    write_case,
)
from devkit.badinput.layout_mutations import LAYOUT_MUTATIONS  # noqa: E402
from devkit.badinput.mutations import DOCUMENT_MUTATIONS, Base  # noqa: E402
from rooflens.analyzers.perf.platforms import Platform, get_platform  # noqa: E402
from rooflens.analyzers.trace.health import assess  # noqa: E402
from rooflens.analyzers.trace.open_trace import open_trace  # noqa: E402

SHARED = REPO.parent / "shared/traces"
DEFAULT_TRACES = (
    SHARED / "h100/gaunernst_bert-small-uncased__1016001.json.gz",
    SHARED / "mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
    SHARED / "multirank/dlrm_8rank/worker0_step_12.1694128201545.pt.trace.json.gz",
    SHARED / "inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
)
PROGRESS_EVERY = 100  # cases between progress lines
FAMILIES: dict[str, tuple[Mutation, ...]] = {
    "all": ALL_MUTATIONS,
    "layout": LAYOUT_MUTATIONS,
    "damage": DOCUMENT_MUTATIONS,
}


@dataclass(frozen=True)
class Subject:
    """One trace to change: its path, parsed document and the platform it is scored on."""

    path: Path
    base: Base
    platform: Platform | None


def platform_for(trace: Path, name: str | None) -> Platform | None:
    if name:
        return get_platform(name)
    suggested = assess(open_trace(trace)).gpu.suggested_platform
    return get_platform(suggested) if suggested else None


def _worker(conn: Connection, subjects: list[Subject], family: str, work: Path) -> None:
    """Run the cases the parent sends (seeds) until it sends None; reply with outcomes."""
    mutations = FAMILIES[family]
    while (seed := conn.recv()) is not None:
        subject = subjects[seed % len(subjects)]
        folder = work / f"case_{seed}"
        damage_bytes = family != "layout"
        outcome = fuzz_case(
            subject.base, seed, folder, subject.platform, mutations, damage_bytes=damage_bytes
        )
        conn.send(outcome)


class Runner:
    """One worker process at a time; a case over `timeout` seconds is a hang and the worker
    is killed and replaced (the parent only ever ends the process it started)."""

    def __init__(self, subjects: list[Subject], family: str, work: Path, timeout: float):
        self.args = (subjects, family, work)
        self.timeout = timeout
        self.context = multiprocessing.get_context("fork")  # the parsed traces are inherited
        self._start()

    def _start(self) -> None:
        self.conn, child = self.context.Pipe()
        self.process = self.context.Process(target=_worker, args=(child, *self.args), daemon=True)
        self.process.start()
        child.close()

    def run(self, seed: int) -> Outcome:
        self.conn.send(seed)
        if self.conn.poll(self.timeout):
            try:
                return self.conn.recv()
            except EOFError:
                detail = f"the worker died (exit code {self._restart()})"
                return Outcome(seed, "crash", self._mutations(seed), detail)
        self._restart()
        return Outcome(seed, "hang", self._mutations(seed), f"no outcome in {self.timeout:g} s")

    def _mutations(self, seed: int) -> tuple[str, ...]:
        """The mutations of a case whose worker gave no answer (written again to name them)."""
        subjects, family, work = self.args
        with tempfile.TemporaryDirectory(dir=work) as folder:
            base = subjects[seed % len(subjects)].base
            damage_bytes = family != "layout"
            return write_case(
                base, seed, Path(folder), FAMILIES[family], damage_bytes=damage_bytes
            )[1]

    def _restart(self) -> int | None:
        self.process.kill()
        self.process.join()
        code = self.process.exitcode
        self._start()
        return code

    def close(self) -> None:
        self.conn.send(None)
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", type=Path, action="append", help="a valid trace (repeatable)")
    ap.add_argument("--cases", type=int, default=1000, help="number of cases (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="first seed; cases use seed..seed+N-1")
    ap.add_argument("--mutations", choices=sorted(FAMILIES), default="all",
                    help="all (default), layout (layout and timing only), damage")  # fmt: skip
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
    ap.add_argument("--platform", help="platform to score against (default: each trace's GPU)")
    ap.add_argument("--keep", type=Path, help="keep the changed traces and run folders here")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)

    paths = args.trace or list(DEFAULT_TRACES)
    subjects = [Subject(p, Base.from_file(p), platform_for(p, args.platform)) for p in paths]
    work = args.keep or Path(tempfile.mkdtemp(prefix="fuzz_traces_"))
    work.mkdir(parents=True, exist_ok=True)
    for k, s in enumerate(subjects):
        platform = s.platform.name if s.platform else "none"
        print(f"trace {k}: {s.path.name} ({len(s.base.doc['traceEvents']):,} events, {platform})")
    last = args.seed + args.cases - 1
    print(f"mutations: {args.mutations}; seeds {args.seed}..{last}; timeout {args.timeout:g} s; "
          f"work folder {work}\n")  # fmt: skip
    outcomes: list[Outcome] = []
    started = time.perf_counter()
    runner = Runner(subjects, args.mutations, work, args.timeout)
    try:
        for seed in range(args.seed, args.seed + args.cases):
            outcome = runner.run(seed)
            outcomes.append(outcome)
            if outcome.kind in ("crash", "hang"):
                name = subjects[seed % len(subjects)].path.name
                print(f"{outcome.kind.upper()} seed {seed} ({name}) "
                      f"{'+'.join(outcome.mutations)}: {outcome.detail}")  # fmt: skip
            if not args.keep:
                shutil.rmtree(work / f"case_{seed}", ignore_errors=True)
            if len(outcomes) % PROGRESS_EVERY == 0:
                so_far = Counter(o.kind for o in outcomes)
                print(f"  {len(outcomes)} cases, {time.perf_counter() - started:.0f} s: "
                      + ", ".join(f"{so_far[k]} {k}" for k in KINDS))  # fmt: skip
    finally:
        runner.close()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report(outcomes, subjects, time.perf_counter() - started)
    return 1 if any(o.kind in ("crash", "hang") for o in outcomes) else 0


KINDS = ("loaded", "refused", "crash", "hang")


def report(outcomes: list[Outcome], subjects: list[Subject], seconds: float) -> None:
    kinds = Counter(o.kind for o in outcomes)
    each = seconds / max(len(outcomes), 1)
    print(f"\n{len(outcomes)} cases in {seconds:.1f} s ({each:.2f} s each)")
    for kind in KINDS:
        print(f"  {kind:8} {kinds.get(kind, 0):5}")
    print("\nby trace (loaded / refused / crash / hang)")
    for k, subject in enumerate(subjects):
        c = Counter(o.kind for o in outcomes if o.seed % len(subjects) == k)
        print(f"  {subject.path.name[:48]:48} " + " / ".join(f"{c[x]:4}" for x in KINDS))
    print("\nby mutation (cases using it: loaded / refused / crash / hang)")
    per: dict[str, Counter[str]] = {}
    for o in outcomes:
        for name in set(o.mutations):
            per.setdefault(name, Counter())[o.kind] += 1
    for name, c in sorted(per.items()):
        print(f"  {name:18} " + " / ".join(f"{c[x]:5}" for x in KINDS))
    reasons = Counter(_reason(o.detail) for o in outcomes if o.kind == "refused")
    print("\nmost common refusals")
    for reason, n in reasons.most_common(12):
        print(f"  {n:5}  {reason}")


def _reason(problem: str) -> str:
    """A refusal without its numbers, so equal problems group together."""
    return "".join("N" if ch.isdigit() else ch for ch in problem)[:90]


if __name__ == "__main__":
    sys.exit(main())
