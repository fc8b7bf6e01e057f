"""Benchmark a generated job on the embedded LocalCluster against its ranks one after another.

Two measurements (docs/multirank.md#fan-out):

1. **Fan-out vs sequential.** A generated job of `--ranks` ranks (64 by default, the issue's
   size) is analysed twice: every rank's task (`run_rank`) called one after another in this
   process, then the same tasks on an embedded LocalCluster sized to the machine (`analyze_job`,
   cluster start-up included). Reported: both wall times and their ratio, each worker's peak RSS
   (VmHWM, from the tasks' own reports) and the whole cluster's peak RSS (every process of the
   tree, sampled every 50 ms).
2. **Bounded memory.** A job of `--big-ranks` larger ranks is given a memory budget smaller
   than the ranks need together (`--budget-ranks` ranks' worth: one rank's measured need times
   that), the embedded cluster is sized from the budget (`local_workers`), and the sampled peak
   of the whole tree is compared with the budget and with what the ranks would need together.
   One rank's need is measured first in a fresh process, its whole run to the report: its
   peak RSS (VmHWM) minus the interpreter's with the engine imported, per byte of the rank's
   JSON text, which calibrates `BYTES_PER_JSON_BYTE` in cluster.py. The job itself runs
   summaries only (`until none`), the mode for finding a straggler in a large job.

MB = 2**20 bytes here (MiB). Each part prints one line of figures; --json-out writes them all.

Run:  python benchmarks/bench_job.py [--ranks 64] [--steps 20] [--until none|loaded|reported]
      [--big-ranks 8] [--big-steps 400] [--budget-ranks 2.5] [--workdir DIR] [--json-out F]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from rooflens.analyzers.job.cluster import (
    ClusterChoice,
    json_bytes,
    local_workers,
)
from rooflens.analyzers.job.fanout import cluster_client
from rooflens.analyzers.job.inputs import job_inputs
from rooflens.analyzers.job.job_run import analyze_job, rank_tasks
from rooflens.analyzers.job.rank_task import RankDone, run_rank
from rooflens.analyzers.synthetic.job import JobPlan, write_job

MB = 1 << 20
ONE_RANK = """
import json, sys, tempfile
from rooflens.analyzers.job.rank_task import RankTask, peak_rss_mb, run_rank
base = peak_rss_mb()
out = tempfile.mkdtemp()
done = run_rank(RankTask(sys.argv[1], 0, run_folder=out, until="reported"))
print(json.dumps({"base_mb": base, "peak_mb": done.peak_rss_mb, "ok": done.summary is not None}))
"""


class TreeSampler:
    """The peak summed RSS of this process and all its descendants, sampled in a thread."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.every_s, self.peak, self._stop = every_s, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            total = 0
            for proc in [me, *me.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_info().rss
            self.peak = max(self.peak, total)
            self._stop.wait(self.every_s)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def per_worker_peaks(outcomes) -> dict[int, float]:
    peaks: dict[int, float] = {}
    for o in outcomes:
        if isinstance(o, RankDone):
            peaks[o.pid] = max(peaks.get(o.pid, 0.0), o.peak_rss_mb)
    return peaks


def fan_out_vs_sequential(work: Path, ranks: int, steps: int, until: str) -> dict[str, Any]:
    folder = work / f"job{ranks}"
    plan = JobPlan(ranks=ranks, steps=steps, slow_rank=ranks // 3, slow_us=200.0)
    paths = write_job(folder / "in", plan)
    inputs = job_inputs([str(folder / "in")])
    tasks = rank_tasks(inputs, folder / "seq", None, until)
    start = time.perf_counter()
    seq = [run_rank(t) for t in tasks]
    sequential_s = time.perf_counter() - start
    failed = [o for o in seq if not isinstance(o, RankDone)]
    assert not failed, failed
    choice = ClusterChoice().resolved([f.path for f in inputs.files])
    start = time.perf_counter()
    with cluster_client(choice, paths):
        startup_s = time.perf_counter() - start  # what a job pays before its first rank
    start = time.perf_counter()
    with TreeSampler() as tree:
        result = analyze_job(inputs, folder / "dask", choice, until=until)
    fanout_s = time.perf_counter() - start
    assert not result.failed, result.failed
    workers = per_worker_peaks(result.outcomes)
    return {
        "ranks": ranks,
        "until": until,
        "json_mb_per_rank": round(json_bytes(paths[0]) / MB, 3),
        "workers": choice.workers,
        "sequential_s": round(sequential_s, 2),
        "fanout_s": round(fanout_s, 2),
        "speedup": round(sequential_s / fanout_s, 2),
        "cluster_start_s": round(startup_s, 2),
        "task_s_sequential": round(sum(o.seconds for o in seq), 2),
        "task_s_fanout": round(sum(o.seconds for o in result.done), 2),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "sequential_process_peak_mb": round(max(o.peak_rss_mb for o in seq), 1),
        "worker_peak_mb": sorted(round(v, 1) for v in workers.values()),
        "tree_peak_mb": round(tree.peak / MB, 1),
        "straggler": max(result.waits, key=lambda w: w.times_last).rank,
        "planted": plan.slow_rank,
    }


def one_rank_need(path: Path) -> dict[str, float]:
    """One rank's peak in a fresh process, above the engine-imported interpreter's."""
    done = subprocess.run(
        [sys.executable, "-c", ONE_RANK, str(path)], capture_output=True, text=True, check=True
    )
    figures = json.loads(done.stdout.splitlines()[-1])
    text_mb = json_bytes(path) / MB
    above = figures["peak_mb"] - figures["base_mb"]
    return {**figures, "json_mb": text_mb, "above_base_mb": above, "per_json_byte": above / text_mb}


def bounded_memory(work: Path, ranks: int, steps: int, budget_ranks: float) -> dict[str, Any]:
    folder = work / f"big{ranks}"
    paths = write_job(folder / "in", JobPlan(ranks=ranks, steps=steps, collectives=16))
    need = one_rank_need(paths[0])
    inputs = job_inputs([str(folder / "in")])
    budget = int(budget_ranks * need["peak_mb"] * MB)
    workers = local_workers(paths, None, budget=budget)
    choice = ClusterChoice(workers=workers).resolved(paths)
    start = time.perf_counter()
    with TreeSampler() as tree:
        result = analyze_job(inputs, folder / "dask", choice, until="none")
    assert not result.failed, result.failed
    return {
        "ranks": ranks,
        "json_mb_per_rank": round(need["json_mb"], 1),
        "one_rank_peak_mb": round(need["peak_mb"], 1),
        "engine_base_mb": round(need["base_mb"], 1),
        "bytes_per_json_byte": round(need["per_json_byte"], 2),
        "together_mb": round(ranks * need["peak_mb"], 1),
        "budget_mb": round(budget / MB, 1),
        "workers": workers,
        "wall_s": round(time.perf_counter() - start, 2),
        "worker_peak_mb": sorted(round(v, 1) for v in per_worker_peaks(result.outcomes).values()),
        "tree_peak_mb": round(tree.peak / MB, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64, help="ranks of the fan-out job (>= 2)")
    parser.add_argument("--steps", type=int, default=20, help="profiler steps per rank")
    parser.add_argument(
        "--until", default="reported", choices=["none", "loaded", "reported"],
        help="how far each rank's own run goes (none: the summary only)",
    )  # fmt: skip
    parser.add_argument(
        "--big-ranks", type=int, default=8,
        help="ranks of the bounded-memory job (0: skip that part)",
    )  # fmt: skip
    parser.add_argument("--big-steps", type=int, default=400, help="steps per big rank")
    parser.add_argument("--budget-ranks", type=float, default=2.5, help="budget, in ranks")
    parser.add_argument("--workdir", help="where the generated jobs go (default: a temp dir)")
    parser.add_argument("--json-out", help="also write every figure to this JSON file")
    args = parser.parse_args()
    if args.ranks < 2 or args.big_ranks == 1 or args.big_ranks < 0:
        parser.error("a job needs at least 2 ranks (--big-ranks 0 skips that part)")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        work = Path(tmp)
        figures = {"fan_out": fan_out_vs_sequential(work, args.ranks, args.steps, args.until)}
        print("fan-out vs sequential:", json.dumps(figures["fan_out"]), flush=True)
        if args.big_ranks:
            big = bounded_memory(work, args.big_ranks, args.big_steps, args.budget_ranks)
            figures["bounded"] = big
            print("bounded memory:", json.dumps(big), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
