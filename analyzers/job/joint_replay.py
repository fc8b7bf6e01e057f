"""The ranks of a job replayed together: a synchronising collective completes on every rank
only when the last rank of its group has arrived (docs/what-if.md#jobs).

Each rank keeps its own graph (replay/graph.py). The ranks' collectives are matched as the job
analysis matches them (matching.py: process group, then the recorded sequence number or the
order within the group); each rank's clock is set against rank 0's by the median difference of
their matched collectives' ends (which are simultaneous in the recording, up to the clocks).
The graphs are then laid side by side as one graph, each matched collective a group whose
members start at their rank's arrival and all end at the last arrival plus the transfer (the
shortest member's time: the last to arrive waited for no one), and replayed in one pass. A
change on one rank (a straggler's slow kernels) moves every rank; a change that speeds up a
rank that was not the last to arrive moves none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from ..replay.changes import combined
from ..replay.graph import GpuEvents, HostCalls, ReplayGraph, build_graph
from ..replay.simulate import Changes, Replayed, replay
from ..replay.step_region import StepRegion, StepTimes
from ..replay.step_times import steps_of
from ..replay.what_if import ChangeError, parse_change, steady_region
from ..trace.iterations import Iterations, find_iterations
from ..trace.model import TraceModel
from .matching import match_keys, synchronising

RANKED = re.compile(r"^rank(\d+)@(.+)$")  # a change on one rank: rank3@gpu:gemm=0.5


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RankFigure(Frozen):
    rank: int
    measured_step_ms: float
    replayed_step_ms: float  # replayed with the other ranks (the job's identity replay)
    replay_error_pct: float
    clock_offset_us: float  # this rank's clock minus rank 0's, from the matched collectives
    last_arrivals: int  # matched collectives this rank arrived at last (in the recording)


class JobPrediction(Frozen):
    spec: str
    events: int
    predicted_step_ms: float
    saving_ms: float
    # after the change: how many matched collectives each rank arrives at last (the
    # straggler that sets the pace next), most first
    last_arrivals: dict[int, int]


class JobWhatIf(Frozen):
    """`time_per_step_ms`: the slowest rank's time per steady step in the joint replay;
    predictions in the same measure."""

    ranks: list[RankFigure]
    matched_collectives: int
    time_per_step_ms: float
    changes: list[JobPrediction]
    combined: JobPrediction | None


@dataclass(frozen=True)
class _Rank:
    rank: int
    model: TraceModel
    graph: ReplayGraph
    iterations: Iterations
    region: StepRegion
    host: slice  # its calls and GPU events in the joint graph
    gpu: slice
    threads: int  # its first thread code in the joint graph
    offset: float  # its clock minus rank 0's, µs


def job_what_if(models: dict[int, TraceModel], specs: list[str]) -> JobWhatIf:
    """Raises CannotReplay when a rank lacks what the graph needs, ChangeError for a spec that
    cannot be read or matches nothing."""
    if len(models) < 2:
        raise ChangeError("a job replay needs the traces of at least two ranks")
    graphs = {r: build_graph(m) for r, m in sorted(models.items())}
    groups = {r: _collective_keys(models[r], graphs[r]) for r in graphs}
    offsets, shared = _clock_offsets(graphs, groups)
    ranks = _lay_out(models, graphs, offsets)
    joint = _joint_graph(ranks, groups, shared)
    base = replay(joint)
    identity = _per_step(ranks, joint, base, ())
    parsed = [_parse(ranks, joint, spec) for spec in specs]
    predictions = [_predict(ranks, joint, identity, spec, c, n) for spec, c, n in parsed]
    together = None
    if len(parsed) > 1:
        label = " + ".join(spec for spec, _, _ in parsed)
        both = _combined(joint, [c for _, c, _ in parsed], label)
        together = _predict(ranks, joint, identity, label, both, sum(n for *_, n in parsed))
    last = _last_arrivals(ranks, joint, base, recorded=True)
    figures = []
    for r in ranks:
        steps = steps_of(r.graph, _rank_replay(r, joint, base), r.iterations)
        figures.append(
            RankFigure(
                rank=r.rank,
                measured_step_ms=steps.measured_step_ms,
                replayed_step_ms=steps.replayed_step_ms,
                replay_error_pct=steps.replay_error_pct,
                clock_offset_us=round(r.offset, 3),
                last_arrivals=last.get(r.rank, 0),
            )
        )
    return JobWhatIf(
        ranks=figures,
        matched_collectives=len(shared),
        time_per_step_ms=max(identity.values()) / 1e3,
        changes=predictions,
        combined=together,
    )


# -- matching and clocks ---------------------------------------------------------------------


def _collective_keys(model: TraceModel, graph: ReplayGraph) -> pd.Series:
    """Per synchronising collective kernel of the rank (index into its GPU events): its key,
    (process group, sequence number or order). Keys a rank holds twice (a collective split
    over several kernels) are left out."""
    ev = model.recorded
    gpu = model.gpu
    comm = gpu.index.to_numpy()[(gpu["bucket"] == "communication").to_numpy()]
    comm = comm[(ev["cat"].to_numpy()[comm] == "kernel")]
    position = pd.Series(np.arange(len(graph.gpu.uid)), index=graph.gpu.uid)
    comm = comm[np.isin(comm, graph.gpu.uid)]
    names = ev["collective_name"].astype(object).to_numpy()[comm]
    keep = np.array([synchronising("" if not isinstance(n, str) else n) for n in names], bool)
    comm = comm[keep]
    if len(comm) == 0:
        return pd.Series([], dtype=object)
    group = ev["pg_name"].astype(object).to_numpy()[comm]
    table = pd.DataFrame(
        {
            "process_group": [g if isinstance(g, str) else "" for g in group],
            "seq": ev["coll_seq"].to_numpy(np.int64)[comm],
            "ts": ev["ts"].to_numpy(float)[comm],
            "at": position[comm].to_numpy(),
        }
    ).sort_values("ts", kind="stable")
    table["index"] = table.groupby("process_group").cumcount().to_numpy(np.int64)
    key, _ = match_keys(table)
    keys = pd.Series(
        list(zip(table["process_group"], key.tolist(), strict=True)), index=table["at"]
    )
    return keys[~keys.duplicated(keep=False)]


def _clock_offsets(
    graphs: dict[int, ReplayGraph], groups: dict[int, pd.Series]
) -> tuple[dict[int, float], list[tuple]]:
    """Each rank's clock minus the first rank's (the median difference of their matched
    collectives' recorded ends), and the keys every rank holds."""
    ranks = sorted(graphs)
    common = set(groups[ranks[0]].tolist())
    for r in ranks[1:]:
        common &= set(groups[r].tolist())
    shared = sorted(common, key=str)
    if not shared:
        raise ChangeError(
            "no synchronising collective is found on every rank (process group and sequence "
            "number or order): the ranks cannot be replayed together"
        )

    def ends(r: int) -> np.ndarray:
        at = pd.Series(groups[r].index, index=groups[r].to_numpy())
        gpu = graphs[r].gpu
        idx = at.loc[shared].to_numpy()
        return gpu.start[idx] + gpu.dur[idx]

    first = ends(ranks[0])
    return {r: float(np.median(ends(r) - first)) for r in ranks}, shared


# -- the joint graph -------------------------------------------------------------------------


def _lay_out(
    models: dict[int, TraceModel], graphs: dict[int, ReplayGraph], offsets: dict[int, float]
) -> list[_Rank]:
    out, host_at, gpu_at, threads = [], 0, 0, 0
    for r in sorted(graphs):
        g, model = graphs[r], models[r]
        iterations = find_iterations(model)
        region = steady_region(model, g, iterations)
        n_host, n_gpu = len(g.host.uid), len(g.gpu.uid)
        out.append(
            _Rank(
                r, model, g, iterations, region,
                slice(host_at, host_at + n_host), slice(gpu_at, gpu_at + n_gpu),
                threads, offsets[r],
            )
        )  # fmt: skip
        host_at, gpu_at = host_at + n_host, gpu_at + n_gpu
        threads += int(g.host.thread.max(initial=-1)) + 1
    return out


def _joint_graph(ranks: list[_Rank], groups: dict[int, pd.Series], shared: list) -> ReplayGraph:
    """The ranks' graphs side by side on rank 0's clock, the shared collectives grouped."""
    code = {key: k for k, key in enumerate(shared)}
    hosts, gpus = [], []
    queues = 0
    for r in ranks:
        h, g = r.graph.host, r.graph.gpu
        h0, g0 = r.host.start, r.gpu.start
        hosts.append(
            replace(
                h,
                thread=h.thread + r.threads,
                start=h.start - r.offset,
                waits_for=np.where(h.waits_for >= 0, h.waits_for + g0, -1),
                woken_by=None
                if h.woken_by is None
                else np.where(h.woken_by >= 0, h.woken_by + h0, -1),
            )
        )
        group = np.full(len(g.uid), -1, dtype=np.int64)
        keys = groups[r.rank]
        held = keys[keys.isin(code.keys()).to_numpy()]
        group[held.index.to_numpy()] = [code[k] for k in held]
        gpus.append(
            replace(
                g,
                queue=g.queue + queues,
                start=g.start - r.offset,
                launch=np.where(g.launch >= 0, g.launch + h0, -1),
                after=np.where(g.after >= 0, g.after + g0, -1),
                group=group,
            )
        )
        queues += int(g.queue.max(initial=-1)) + 1
    host = HostCalls(*(np.concatenate([getattr(h, f) for h in hosts]) for f in _HOST_FIELDS))
    gpu = GpuEvents(*(np.concatenate([getattr(g, f) for g in gpus]) for f in _GPU_FIELDS))
    assumptions = tuple(a for r in ranks for a in r.graph.assumptions)
    return ReplayGraph(host, gpu, ranks[0].graph.usual_delay_us, assumptions)


_HOST_FIELDS = (
    "uid", "thread", "start", "dur", "gap", "waits_for", "floor", "residual", "woken_by",
    "waits_start",
)  # fmt: skip
_GPU_FIELDS = (
    "uid", "queue", "start", "dur", "launch", "delay", "stream_gap", "after", "recorded", "held",
    "group",
)  # fmt: skip


def _rank_replay(r: _Rank, joint: ReplayGraph, replayed: Replayed) -> Replayed:
    """One rank's part of a joint replay, on its own clock."""
    return Replayed(
        replayed.host_start[r.host] + r.offset,
        replayed.host_end[r.host] + r.offset,
        replayed.gpu_start[r.gpu] + r.offset,
        replayed.gpu_end[r.gpu] + r.offset,
        replayed.host_waited[r.host],
        replayed.gpu_set_by[r.gpu],
    )


# -- changes and predictions -----------------------------------------------------------------


def _parse(ranks: list[_Rank], joint: ReplayGraph, spec: str) -> tuple[str, Changes, int]:
    """`rankN@SPEC` changes rank N only; a plain SPEC changes every rank it matches."""
    found = RANKED.match(spec.strip())
    wanted = {int(found.group(1))} if found else {r.rank for r in ranks}
    text = found.group(2) if found else spec.strip()
    unknown = wanted - {r.rank for r in ranks}
    if unknown:
        raise ChangeError(f"{spec!r}: no trace of rank {min(unknown)} in the job")
    if text == "warmup":
        raise ChangeError(f"{spec!r}: a job's predictions are on its steady steps already")
    parts, events = [], 0
    for r in ranks:
        if r.rank not in wanted:
            continue
        try:
            change = parse_change(r.model, r.graph, text, r.region)
        except ChangeError:
            if found or len(wanted) == 1:
                raise
            continue  # a plain change need not match on every rank
        assert change.changes is not None
        parts.append(_lifted(r, joint, change.changes))
        events += change.events
    if not parts:
        raise ChangeError(f"{spec!r} matches nothing on any rank")
    return spec.strip(), _combined(joint, parts, spec.strip()), events


def _lifted(r: _Rank, joint: ReplayGraph, c: Changes) -> Changes:
    """A change of one rank's graph as a change of the joint graph."""
    n_host, n_gpu = len(joint.host.uid), len(joint.gpu.uid)

    def spread(values: np.ndarray | None, size: int, at: slice, fill: float | bool):
        if values is None:
            return None
        out = np.full(size, fill, dtype=values.dtype)
        out[at] = values
        return out

    return Changes(
        gpu_scale=spread(c.gpu_scale, n_gpu, r.gpu, 1.0),
        host_removed=tuple(
            (t + r.threads, lo - r.offset, hi - r.offset) for t, lo, hi in c.host_removed
        ),
        host_scale=spread(c.host_scale, n_host, r.host, 1.0),
        label=c.label,
        host_unblocked=spread(c.host_unblocked, n_host, r.host, False),
        gap_scale=spread(c.gap_scale, n_host, r.host, 1.0),
        release=spread(c.release, n_gpu, r.gpu, 1.0),
    )


def _combined(joint: ReplayGraph, parts: list[Changes], label: str) -> Changes:
    return replace(combined(joint, parts), label=label)


def _per_step(
    ranks: list[_Rank], joint: ReplayGraph, replayed: Replayed, removed: tuple
) -> dict[int, float]:
    """Each rank's time per steady step (µs) in a joint replay."""
    out = {}
    for r in ranks:
        mine = tuple(
            (t - r.threads, lo + r.offset, hi + r.offset)
            for t, lo, hi in removed
            if r.threads <= t < r.threads + int(r.graph.host.thread.max(initial=-1)) + 1
        )
        times: StepTimes = r.region.times(r.graph, _rank_replay(r, joint, replayed), mine)
        out[r.rank] = times.per_step_us
    return out


def _predict(
    ranks: list[_Rank],
    joint: ReplayGraph,
    identity: dict[int, float],
    spec: str,
    changes: Changes,
    events: int,
) -> JobPrediction:
    after = replay(joint, changes)
    per_step = _per_step(ranks, joint, after, changes.host_removed)
    before, now = max(identity.values()), max(per_step.values())
    return JobPrediction(
        spec=spec,
        events=events,
        predicted_step_ms=now / 1e3,
        saving_ms=(before - now) / 1e3,
        last_arrivals=_last_arrivals(ranks, joint, after),
    )


def _last_arrivals(
    ranks: list[_Rank], joint: ReplayGraph, replayed: Replayed, recorded: bool = False
) -> dict[int, int]:
    """Per rank, the matched collectives it arrived at last, most first."""
    gpu = joint.gpu
    assert gpu.group is not None
    grouped = np.flatnonzero(gpu.group >= 0)
    if len(grouped) == 0:
        return {}
    start = gpu.start[grouped] if recorded else replayed.gpu_start[grouped]
    owner = np.searchsorted([r.gpu.start for r in ranks], grouped, side="right") - 1
    table = pd.DataFrame({"group": gpu.group[grouped], "start": start, "rank": owner})
    last = table.loc[table.groupby("group")["start"].idxmax(), "rank"]
    counts = last.value_counts()
    return {ranks[int(k)].rank: int(v) for k, v in counts.items()}
