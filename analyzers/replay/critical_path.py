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
from dataclasses import dataclass

import numpy as np

from ..trace.columns import MISSING
from ..trace.intervals import length_before, merge
from ..trace.model import TraceModel
from .graph import ReplayGraph
from .simulate import BY_LAUNCH, BY_OTHER_STREAM, BY_QUEUE, Replayed

OUTSIDE_OPERATORS = "(host work outside operators)"
OPERATOR_CATEGORIES = ("cpu_op", "user_annotation", "gpu_user_annotation")
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


@dataclass(frozen=True)
class CriticalPath:
    segments: tuple[Segment, ...]  # from the iteration's end back to its start
    span_us: float
    gpu_events: frozenset[int] = frozenset()  # graph GPU indices whose run is on the path

    def host_us(self, thread: int, starts: np.ndarray, ends: np.ndarray) -> float:
        """Host time of `thread` on the path inside the disjoint spans [starts, ends)."""
        own = [(s.start_us, s.end_us) for s in self.segments
               if s.kind in HOST_KINDS and s.thread == thread]  # fmt: skip
        if not own or len(starts) == 0:
            return 0.0
        path = merge(*np.asarray(own).T)
        return float((length_before(path, ends) - length_before(path, starts)).sum())

    def by_kind(self) -> dict[str, float]:
        return _summed((s.kind, s.us) for s in self.segments)

    def top(self, n: int = 10) -> list[tuple[str, str, float, float]]:
        """(kind, name, µs, share of the span) of the largest items on the path."""
        summed = _summed(((s.kind, s.name), s.us) for s in self.segments)
        ranked = sorted(summed.items(), key=lambda kv: -kv[1])[:n]
        span = self.span_us or 1.0
        return [(k, name, us, us / span) for (k, name), us in ranked]


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
    on = np.flatnonzero((host.thread == thread) & (replayed.host_end <= end))
    if len(on) == 0:
        return CriticalPath((), end - begin)
    names = names or PathNames(model, graph)
    walk = _Walk(graph, replayed, names, begin)
    last = int(on[-1])
    walk.add("host_work", names.host(last), replayed.host_end[last], end, thread)
    walk.from_host_end(last)
    return CriticalPath(tuple(walk.segments), end - begin, frozenset(walk.on_path))


class PathNames:
    """Names for the path: a GPU event's kernel, a host call's name, and for host work between
    calls the innermost operator or annotation that held the thread there."""

    def __init__(self, model: TraceModel, graph: ReplayGraph) -> None:
        self.model, self.graph = model, graph
        ev = model.recorded
        ops = np.flatnonzero(ev["cat"].isin(OPERATOR_CATEGORIES).to_numpy())
        thread = model.thread_code[ops]
        start = ev["ts"].to_numpy(float)[ops]
        self.end = (ev["ts"] + ev["dur"].fillna(0.0)).to_numpy(float)
        order = np.lexsort((-self.end[ops], start, thread))  # at one start, the outer first
        self.ops, self.op_thread, self.op_start = ops[order], thread[order], start[order]

    def gpu(self, j: int) -> str:
        return str(self.model.names[self.graph.gpu.uid[j]])

    def call(self, i: int) -> str:
        return str(self.model.names[self.graph.host.uid[i]])

    def host(self, i: int) -> str:
        """What the thread was in during the recorded gap before call `i`."""
        host = self.graph.host
        at = host.start[i] - host.gap[i] / 2
        lo = np.searchsorted(self.op_thread, host.thread[i], side="left")
        hi = np.searchsorted(self.op_thread, host.thread[i], side="right")
        k = lo + int(np.searchsorted(self.op_start[lo:hi], at, side="right")) - 1
        uid = int(self.ops[k]) if k >= lo else MISSING
        parent = self.model.tree.parent
        while uid != MISSING and self.end[uid] < at:
            uid = int(parent[uid])
        return OUTSIDE_OPERATORS if uid == MISSING else str(self.model.names[uid])


class _Walk:
    def __init__(self, graph: ReplayGraph, r: Replayed, names: PathNames, begin: float) -> None:
        self.graph, self.r, self.names, self.begin = graph, r, names, begin
        self.segments: list[Segment] = []
        # each call and event is passed once: a trace whose times contradict its links (a
        # launch after its kernel) would otherwise lead the walk round in a circle
        self.seen_host: set[int] = set()
        self.seen_gpu: set[int] = set()
        self.on_path: set[int] = set()

    def add(self, kind: str, name: str, start: float, end: float, thread: int = -1) -> None:
        start = max(start, self.begin)
        if end > start:
            self.segments.append(Segment(kind, name, float(start), float(end), thread))

    def from_host_end(self, i: int) -> None:
        """Walk back from the end of host call `i`, alternating host and GPU moments."""
        host, r = self.graph.host, self.r
        while i not in self.seen_host:
            self.seen_host.add(i)
            on = int(host.thread[i])
            if r.host_start[i] < self.begin and not r.host_waited[i]:
                self.add("host_call", self.names.call(i), r.host_start[i], r.host_end[i], on)
                return
            if r.host_waited[i]:
                j = int(host.waits_for[i])
                self.add("wait_return", self.names.call(i), r.gpu_end[j], r.host_end[i], on)
                nxt = self._from_gpu_end(j)
                if nxt is None:
                    return
                i = nxt
                on = int(host.thread[i])
            else:
                self.add("host_call", self.names.call(i), r.host_start[i], r.host_end[i], on)
            if r.host_start[i] <= self.begin or i == 0 or host.thread[i - 1] != host.thread[i]:
                return
            k = -1 if host.woken_by is None else int(host.woken_by[i])
            if k >= 0 and r.host_end[k] > r.host_end[i - 1]:  # handed over by another thread
                self.add("host_work", self.names.host(i), r.host_end[k], r.host_start[i], on)
                i = k
                continue
            self.add("host_work", self.names.host(i), r.host_end[i - 1], r.host_start[i], on)
            i -= 1

    def _from_gpu_end(self, j: int) -> int | None:
        """Walk back through GPU events from the end of `j` to the host call that set the
        chain going; None when the walk reaches the window's start on the GPU."""
        gpu, r = self.graph.gpu, self.r
        while r.gpu_end[j] > self.begin and j not in self.seen_gpu:
            self.seen_gpu.add(j)
            self.add("gpu", self.names.gpu(j), r.gpu_start[j], r.gpu_end[j])
            self.on_path.add(j)
            by = r.gpu_set_by[j]
            if by == BY_QUEUE:
                kind = "gpu_wait" if gpu.held[j] else "stream_gap"
                self.add(kind, self.names.gpu(j), r.gpu_end[j - 1], r.gpu_start[j])
                j -= 1
            elif by == BY_OTHER_STREAM:
                j = int(gpu.after[j])
            elif by == BY_LAUNCH:
                launch = int(gpu.launch[j])
                kind = "gpu_wait" if gpu.held[j] else "launch_delay"
                self.add(kind, self.names.gpu(j), r.host_start[launch], r.gpu_start[j])
                return launch  # the path goes on from the launch call's start
            else:
                return None
        return None


def _summed(items) -> dict:
    out: dict = defaultdict(float)
    for key, us in items:
        out[key] += us
    return dict(out)
