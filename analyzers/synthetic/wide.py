"""Pairs of traces whose call trees have very long sibling lists, for the tree diff's cost
(benchmarks/bench_compare.py) and its answers (edits planted at known places).

Trace 1 runs `ops` operators, each launching one kernel, under `parents` parent spans of one
profiler step (`parents=1`: every operator a sibling of all the others, as a recommendation
model's thousands of embedding lookups under one forward). Their names cycle through a small
vocabulary, so almost no name is unique, the case that makes an alignment by longest common
subsequence quadratic. Trace 2 is trace 1 with an edit every `edit_every` operators: an
operator left out, an extra one put in, or one renamed, in turn; `planted` lists them.
Deterministic for a seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .writer import Writer

VOCABULARY = (
    "aten::embedding_bag",
    "aten::index_select",
    "aten::add",
    "aten::mul",
    "aten::cat",
    "aten::mm",
    "aten::relu",
    "aten::sum",
    "aten::view",
    "aten::sigmoid",
)
EXTRA = "aten::clone"  # what trace 2 puts in
RENAMED = "aten::addmm"  # what a renamed operator becomes in trace 2
KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
T0_US = 3_000_000.0


@dataclass(frozen=True)
class WidePlan:
    ops: int = 20_000
    parents: int = 1
    edit_every: int = 500
    seed: int = 0
    op_us: float = 12.0
    kernel_us: float = 3.0


@dataclass(frozen=True)
class Planted:
    dropped: int  # operators of trace 1 missing from trace 2
    added: int  # operators of trace 2 missing from trace 1
    renamed: int  # operators renamed between the traces


def sequences(plan: WidePlan) -> tuple[list[str], list[str], Planted]:
    """The operator names of trace 1 and of trace 2, and what was edited."""
    rng = random.Random(plan.seed)
    one = [VOCABULARY[(k + rng.randrange(3)) % len(VOCABULARY)] for k in range(plan.ops)]
    two: list[str] = []
    counts = [0, 0, 0]
    for k, name in enumerate(one):
        edit = (k // plan.edit_every) % 3 if k % plan.edit_every == plan.edit_every // 2 else -1
        if edit == 0:
            counts[0] += 1
            continue
        if edit == 1:
            counts[1] += 1
            two.append(EXTRA)
        two.append(RENAMED if edit == 2 and name != RENAMED else name)
        counts[2] += edit == 2
    return one, two, Planted(*counts)


def write_wide_pair(folder: Path, plan: WidePlan = WidePlan()) -> tuple[Path, Path]:
    """`wide1.json.gz` and `wide2.json.gz` in `folder`."""
    one, two, _ = sequences(plan)
    return (
        _write(Path(folder) / "wide1.json.gz", one, plan),
        _write(Path(folder) / "wide2.json.gz", two, plan),
    )


def _write(path: Path, names: list[str], plan: WidePlan) -> Path:
    w = Writer(device=H100, host_pid=7070, main_tid=7070)
    t = T0_US + 5.0
    per_parent = -(-len(names) // plan.parents)
    for p in range(plan.parents):
        chunk = names[p * per_parent : (p + 1) * per_parent]
        start = t
        for name in chunk:
            got = w.launching_op(name, KERNEL, t, plan.kernel_us)
            t = max(t + plan.op_us, got.call_end + w.timing.op_tail_us)
        if plan.parents > 1:
            w.annotation(f"## forward block {p} ##", start - 1.0, t + 1.0)
        t += 5.0
    w.step(0, T0_US, t + 5.0)
    return w.write(path, "wide")
