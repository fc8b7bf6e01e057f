"""The critical path of an iteration: walked back from its end through whatever set each
moment in the replay, down to its start.

Each step of the walk is a segment: a GPU event's run (`gpu`), a host call's own time
(`host_call`), host work between calls (`host_work`, named by the operator or annotation
that made the next call), a launch delay, a stream's gap, or a blocking call's return after
the GPU event it waited for. The shares per kind and per name say what sets the step time:
shortening anything off the path buys nothing until the path moves.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..trace.columns import MISSING
from ..trace.intervals import length_before, merge
from ..trace.iterations import Iterations
from ..trace.model import TraceModel
from .graph import ReplayGraph
from .simulate import BY_LAUNCH, BY_OTHER_STREAM, BY_QUEUE, Replayed, map_times

OUTSIDE_OPERATORS = "(host work outside operators)"
OPERATOR_CATEGORIES = ("cpu_op", "user_annotation", "gpu_user_annotation")
STEP_MARKER = "ProfilerStep#"
HOST_KINDS = frozenset({"host_call", "host_work", "wait_return"})


@dataclass(frozen=True)
class Segment:
    kind: str  # gpu, host_call, host_work, launch_delay, stream_gap, wait_return, gpu_wait
    name: str
    start_us: float
    end_us: float
    thread: int = -1  # a host segment's thread code

    @property
    def us(self) -> float:
        return max(0.0, self.end_us - self.start_us)


# what a segment's reference is: a GPU event, a host call, or the host work before a call
GPU_REF, CALL_REF, WORK_REF = 0, 1, 2
OUTSIDE_CODE = -2  # the name code of host work outside operators
KIND_REF = {
    "gpu": GPU_REF, "stream_gap": GPU_REF, "gpu_wait": GPU_REF, "launch_delay": GPU_REF,
    "host_call": CALL_REF, "wait_return": CALL_REF, "host_work": WORK_REF,
}  # fmt: skip


@dataclass(frozen=True)
class CriticalPath:
    """The path as columns, from the iteration's end back to its start: per segment its kind,
    the event it refers to (by `KIND_REF`), its replayed start and end and, on the host, its
    thread. Names are looked up once per event, when asked for (`top`, `segments`)."""

    kinds: tuple[str, ...]
    refs: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    threads: np.ndarray
    span_us: float
    names: PathNames | None = None
    gpu_events: frozenset[int] = frozenset()  # graph GPU indices whose run is on the path

    @property
    def segments(self) -> tuple[Segment, ...]:
        named = self._names()
        return tuple(
            Segment(k, n, float(a), float(b), int(t))
            for k, n, a, b, t in zip(
                self.kinds, named, self.starts, self.ends, self.threads, strict=True
            )
        )

    def host_us(self, thread: int, starts: np.ndarray, ends: np.ndarray) -> float:
        """Host time of `thread` on the path inside the disjoint spans [starts, ends)."""
        own = np.fromiter((k in HOST_KINDS for k in self.kinds), bool, len(self.kinds))
        own &= self.threads == thread
        if not own.any() or len(starts) == 0:
            return 0.0
        path = merge(self.starts[own], self.ends[own])
        return float((length_before(path, ends) - length_before(path, starts)).sum())

    def by_kind(self) -> dict[str, float]:
        return _summed(zip(self.kinds, (self.ends - self.starts).tolist(), strict=True))

    def top(self, n: int = 10) -> list[tuple[str, str, float, float]]:
        """(kind, name, µs, share of the span) of the largest items on the path: summed by
        kind and name code, only the largest named."""
        if not self.kinds or self.names is None:
            return []
        kind_code, kinds = pd.factorize(np.asarray(self.kinds, dtype=object))
        frame = pd.DataFrame(
            {"kind": kind_code, "name": self._codes(), "us": self.ends - self.starts}
        )
        summed = frame.groupby(["kind", "name"], sort=False)["us"].sum()
        ranked = summed.sort_values(ascending=False, kind="stable")[:n]
        span = self.span_us or 1.0
        return [
            (str(kinds[k]), self.names.decode(int(c)), float(us), float(us) / span)
            for (k, c), us in ranked.items()
        ]

    def _codes(self) -> np.ndarray:
        """Per segment, the name code of what it refers to (PathNames.decode reads it)."""
        out = np.full(len(self.kinds), OUTSIDE_CODE, dtype=np.int64)
        ref_kind = np.fromiter((KIND_REF[k] for k in self.kinds), np.int8, len(self.kinds))
        for code in (GPU_REF, CALL_REF, WORK_REF):
            on = ref_kind == code
            if on.any() and self.names is not None:
                out[on] = self.names.codes(code, self.refs[on])
        return out

    def _names(self) -> list[str]:
        if self.names is None:
            return [""] * len(self.kinds)
        return [self.names.decode(int(c)) for c in self._codes()]


def critical_path(
    model: TraceModel,
    graph: ReplayGraph,
    replayed: Replayed,
    thread: int,
    begin: float,
    end: float,
    names: PathNames | None = None,
) -> CriticalPath:
    """The path through the replayed window [begin, end) that ends at the last call of
    `thread` before `end` (replayed times); `names` built once serve every path of a graph."""
    host = graph.host
    names = names or PathNames(model, graph)
    on = np.flatnonzero((host.thread == thread) & (replayed.host_end <= end))
    walk = _Walk(graph, replayed, begin)
    if len(on):
        last = int(on[-1])
        walk.add("host_work", last, replayed.host_end[last], end, thread)
        walk.from_host_end(last)
    return CriticalPath(
        tuple(walk.kinds),
        np.asarray(walk.refs, dtype=np.int64),
        np.asarray(walk.starts, dtype=float),
        np.asarray(walk.ends, dtype=float),
        np.asarray(walk.threads, dtype=np.int64),
        end - begin,
        names,
        frozenset(walk.on_path),
    )


def median_step_path(
    model: TraceModel,
    graph: ReplayGraph,
    replayed: Replayed,
    iterations: Iterations,
    thread: int,
    names: PathNames | None = None,
    holds: Callable[[int], bool] = lambda _: True,
) -> CriticalPath:
    """The path of the median marked iteration whose index `holds` (the whole replayed
    window when none is marked)."""
    marked = [
        it for it in iterations.iterations
        if not it.open_end and it.host_ms > 0 and holds(it.index)
    ]  # fmt: skip
    if not marked:
        begin = float(min(replayed.host_start.min(initial=np.inf), replayed.gpu_start.min()))
        return critical_path(model, graph, replayed, thread, begin, replayed.end, names)
    it = sorted(marked, key=lambda i: i.host_ms)[len(marked) // 2]
    bounds = np.asarray([it.host_start_ms, it.host_end_ms]) * 1e3 + iterations.origin_us
    begin, end = map_times(graph, replayed, thread, bounds).tolist()
    return critical_path(model, graph, replayed, thread, begin, end, names)


class PathNames:
    """Names for the path: a GPU event's kernel, a host call's name, and for host work between
    calls the innermost operator or annotation that held the thread there."""

    def __init__(self, model: TraceModel, graph: ReplayGraph) -> None:
        self.model, self.graph = model, graph
        ev = model.recorded
        # the profiler's own step markers name no work: host work inside a step but outside
        # its operators is said to be outside operators
        names = ev["name"].array
        is_marker = np.append(names.categories.astype(str).str.startswith(STEP_MARKER), False)
        marker = is_marker[names.codes]
        ops = np.flatnonzero(ev["cat"].isin(OPERATOR_CATEGORIES).to_numpy() & ~marker)
        thread = model.thread_code[ops]
        start = ev["ts"].to_numpy(float)[ops]
        self.end = (ev["ts"] + ev["dur"].fillna(0.0)).to_numpy(float)
        order = np.lexsort((-self.end[ops], start, thread))  # at one start, the outer first
        self.ops, self.op_thread, self.op_start = ops[order], thread[order], start[order]
        column = model.events["name"].array
        self.name_codes = np.asarray(column.codes, dtype=np.int64)
        self.categories = column.categories

    def codes(self, code: int, refs: np.ndarray) -> np.ndarray:
        """Name codes of the events `refs` refer to (`code`: GPU_REF, CALL_REF or WORK_REF):
        the trace's name categories, OUTSIDE_CODE for host work outside operators."""
        if code == GPU_REF:
            return self.name_codes[self.graph.gpu.uid[refs]]
        if code == CALL_REF:
            return self.name_codes[self.graph.host.uid[refs]]
        unique, back = np.unique(refs, return_inverse=True)
        uid = self.work(unique)[back]
        return np.where(uid == MISSING, OUTSIDE_CODE, self.name_codes[np.maximum(uid, 0)])

    def decode(self, code: int) -> str:
        if code == OUTSIDE_CODE:
            return OUTSIDE_OPERATORS
        return str(self.categories[code]) if 0 <= code < len(self.categories) else ""

    def work(self, calls: np.ndarray) -> np.ndarray:
        """Per host call, what its thread was in at the middle of the recorded gap before it:
        the innermost operator or annotation open there (its uid), else MISSING."""
        host = self.graph.host
        at = host.start[calls] - host.gap[calls] / 2
        uid = np.full(len(calls), MISSING, dtype=np.int64)
        for thread in np.unique(host.thread[calls]).tolist():
            mine = np.flatnonzero(host.thread[calls] == thread)
            lo = np.searchsorted(self.op_thread, thread, side="left")
            hi = np.searchsorted(self.op_thread, thread, side="right")
            if hi == lo:  # no operator on this thread
                continue
            k = lo + np.searchsorted(self.op_start[lo:hi], at[mine], side="right") - 1
            uid[mine] = np.where(k >= lo, self.ops[np.maximum(k, 0)], MISSING)
        parent = self.model.tree.parent
        for _ in range(256):  # climb from the last operator started to one still open
            closed = (uid != MISSING) & (self.end[np.maximum(uid, 0)] < at)
            if not closed.any():
                break
            uid[closed] = parent[uid[closed]]
        return uid


class _Walk:
    def __init__(self, graph: ReplayGraph, r: Replayed, begin: float) -> None:
        self.graph, self.r, self.begin = graph, r, begin
        self.kinds: list[str] = []
        self.refs: list[int] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.threads: list[int] = []
        # each call and event is passed once: a trace whose times contradict its links (a
        # launch after its kernel) would otherwise lead the walk round in a circle
        self.seen_host: set[int] = set()
        self.seen_gpu: set[int] = set()
        self.on_path: set[int] = set()

    @property
    def segments(self) -> list[str]:  # how many so far (a bound the tests check)
        return self.kinds

    def add(self, kind: str, ref: int, start: float, end: float, thread: int = -1) -> None:
        start = max(start, self.begin)
        if end > start:
            self.kinds.append(kind)
            self.refs.append(ref)
            self.starts.append(float(start))
            self.ends.append(float(end))
            self.threads.append(thread)

    def from_host_end(self, i: int) -> None:
        """Walk back from the end of host call `i`, alternating host and GPU moments."""
        host, r = self.graph.host, self.r
        while i not in self.seen_host:
            self.seen_host.add(i)
            on = int(host.thread[i])
            if r.host_start[i] < self.begin and not r.host_waited[i]:
                self.add("host_call", i, r.host_start[i], r.host_end[i], on)
                return
            if r.host_waited[i]:
                j = int(host.waits_for[i])
                at_start = host.waits_start is not None and bool(host.waits_start[i])
                reached = r.gpu_start[j] if at_start else r.gpu_end[j]
                self.add("wait_return", i, reached, r.host_end[i], on)
                nxt = self._from_gpu_end(j, reached)
                if nxt is None:
                    return
                i = nxt
                on = int(host.thread[i])
            else:
                self.add("host_call", i, r.host_start[i], r.host_end[i], on)
            if r.host_start[i] <= self.begin or i == 0 or host.thread[i - 1] != host.thread[i]:
                return
            k = -1 if host.woken_by is None else int(host.woken_by[i])
            if k >= 0 and r.host_end[k] > r.host_end[i - 1]:  # handed over by another thread
                self.add("host_work", i, r.host_end[k], r.host_start[i], on)
                i = k
                continue
            self.add("host_work", i, r.host_end[i - 1], r.host_start[i], on)
            i -= 1

    def _from_gpu_end(self, j: int, upto: float | None = None) -> int | None:
        """Walk back through GPU events from `upto` inside `j` (its end by default) to the
        host call that set the chain going; None when the walk reaches the window's start on
        the GPU. An event that released its waiters early is on the path up to then."""
        gpu, r = self.graph.gpu, self.r
        upto = r.gpu_end[j] if upto is None else upto
        while r.gpu_end[j] > self.begin and j not in self.seen_gpu:
            self.seen_gpu.add(j)
            self.add("gpu", j, r.gpu_start[j], min(r.gpu_end[j], upto))
            self.on_path.add(j)
            by = r.gpu_set_by[j]
            if by == BY_QUEUE:
                kind = "gpu_wait" if gpu.held[j] else "stream_gap"
                self.add(kind, j, r.gpu_end[j - 1], r.gpu_start[j])
                j -= 1
            elif by == BY_OTHER_STREAM:
                upto, j = r.gpu_start[j], int(gpu.after[j])
                continue
            elif by == BY_LAUNCH:
                launch = int(gpu.launch[j])
                kind = "gpu_wait" if gpu.held[j] else "launch_delay"
                self.add(kind, j, r.host_start[launch], r.gpu_start[j])
                return launch  # the path goes on from the launch call's start
            else:
                return None
        return None


def _summed(items) -> dict:
    out: dict = defaultdict(float)
    for key, us in items:
        out[key] += us
    return dict(out)
