"""The planted answer of a generated situation, and the registry entry that carries it.

Definitions every plan uses:

* An iteration index counts the trace's iterations from 0 in time order (whatever number
  its `ProfilerStep#N` carries).
* "GPU idle of an iteration" is the time inside the iteration's host span (its
  `ProfilerStep#` annotation on the main thread) and inside the GPU window (the first GPU
  event's start to the last one's end) when no kernel, copy or set runs on any stream.
* Each idle instant goes to one cause key (`IDLE_CAUSES`, in precedence order, with one
  exception: `gpu_wait`, the event ending the gap launched before the gap began, wins
  over every host cause, since then the host was not what the GPU waited for). A Python
  frame in flight makes an instant `dispatch`, so an instant is `unexplained` only when no
  host event at all runs on any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Literal

IDLE_CAUSES = (
    "profiler",
    "warmup",
    "allocator",
    "sync",
    "input_pipeline",
    "collective_issue",
    "optimizer_step",
    "launch_bound",
    "gpu_wait",
    "dispatch",
    "unexplained",
)
# The action family of each cause; P1s that are not idle name theirs in the situation.
ACTIONS = {
    "profiler": "profiler_window",
    "warmup": "profiler_schedule",
    "allocator": "allocator",
    "sync": "remove_sync",
    "input_pipeline": "dataloader",
    "collective_issue": "collectives",
    "optimizer_step": "optimizer",
    "launch_bound": "cuda_graphs",
    "gpu_wait": "gpu_dependency",
    "dispatch": "host_overhead",
}
P1Kind = Literal["idle", "compute", "copies", "collectives", "nothing", "refused"]


def ms(values: Mapping[str, float]) -> Mapping[str, float]:
    """A read-only {cause: ms} map, rounded to the ns, zero entries left out."""
    return MappingProxyType({k: round(v, 6) for k, v in values.items() if round(v, 6)})


@dataclass(frozen=True)
class Planted:
    """What the analysis must find on a generated trace (times in ms).

    `idle_by_cause_ms`: GPU idle per cause over the steady iterations (module docstring);
    `excluded_idle_ms`: idle per cause outside them (warm-up, the profiler's tail) that
    must not reach the priorities; `estimate_ms`: the saving P1 carries, or the exact idle
    it addresses as (x, x); `caller`: the operator/annotation around `call_site`. Action
    keys beyond ACTIONS: "precision" (AMP/bf16, tensor cores) and "compiled_region_copies"
    (the compiled graph's clones); None where there is nothing to do."""

    p1: P1Kind
    cause: str | None
    call_site: str
    action: str | None
    idle_by_cause_ms: Mapping[str, float]
    steady_iterations: tuple[int, ...]
    warmup_iterations: tuple[int, ...] = ()
    step_ms: tuple[float, ...] = ()
    estimate_ms: tuple[float, float] | None = None
    notes: str = ""
    caller: str = ""
    partial_host: bool = False  # the host side is filtered: host findings must say partial
    excluded_idle_ms: Mapping[str, float] = field(default_factory=lambda: ms({}))

    @property
    def idle_ms(self) -> float:
        """All GPU idle over the steady iterations."""
        return round(sum(self.idle_by_cause_ms.values()), 6)

    def share(self, cause: str) -> float:
        """`cause`'s share of the steady iterations' idle (0 when nothing idles)."""
        total = self.idle_ms
        return self.idle_by_cause_ms.get(cause, 0.0) / total if total else 0.0


@dataclass(frozen=True)
class Situation:
    """One generated situation: `write(path, seed=...)` writes its trace, `plan` holds the
    constants whose docstring works the answer out, `answer(seed)` is the planted answer
    (the same for every seed unless the plan draws from it)."""

    name: str
    summary: str
    write: Callable[..., Path]
    plan: object
    answer: Callable[[int], Planted]

    @property
    def planted(self) -> Planted:
        """The answer for seed 0."""
        return self.answer(0)
