"""Every idle millisecond of the GPU given a named cause, with the calls behind it.

For each idle gap, the GPU event that ends it names the host thread that launched it (by
correlation id). A gap whose event was already queued before the gap began is a GPU-side
wait: the host had done its part. Otherwise the gap up to the launch is the host's: each
instant goes to the first cause of CAUSES whose events were in flight on the launching
thread (host_causes.py), then on any host thread, and is unexplained only when nothing was
recorded at all. Profiler start/stop artefacts and the host-blocking analysis's charged
regions keep their own precedence. Definitions: docs/analysis.md#idle-causes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import MISSING
from .host_blocking import BlockingCalls, call_sites
from .host_causes import CAUSES, LABELS, IdleCause, cause_masks
from .idle_window import GpuWork, intersect, length_within
from .intervals import Intervals, merge, subtract
from .iterations import Frozen
from .launch_bound import Stretches
from .model import TraceModel
from .phases import PHASES, Phase, PhaseRegions
from .schema import LAUNCH_CATEGORIES
from .time_ranges import MARKS, TimeRanges
from .tree import nearest_ancestor

# after its launch call returns, an event on an empty queue starts within this; a longer wait
# with the event already queued is the GPU waiting on something of its own
LAUNCH_LATENCY_US = 50.0
FRAME_LINE = r"\(\d+\): .*$"  # `file.py(12): function` -> `file.py`: one site per Python file
STREAM_WAITS = ("cudaStreamWaitEvent", "hipStreamWaitEvent", "cuStreamWaitEvent")
TOP_CULPRITS = 5
# causes whose annotation, not the frames inside it, is the name a user acts on
NAMED_BY_NOTES: frozenset[IdleCause] = frozenset({"input_pipeline", "optimizer_step"})
# causes whose culprits are host events of their own signature (host_causes.cause_masks)
_HOST_SIGNATURES: tuple[IdleCause, ...] = (
    "one_off",
    "allocator",
    "input_pipeline",
    "collective_issue",
    "optimizer_step",
)


class Culprit(Frozen):
    """Host events of one call site that were in flight during a cause's idle time."""

    name: str  # the call, operator, annotation or frame in flight (innermost of its cause)
    operator: str  # outermost cpu_op around it, "" when none
    module: str  # innermost nn.Module class, "" when none
    frame: str  # innermost user Python frame, "" when none
    count: int
    idle_ms: float  # GPU idle it was in flight for (innermost event of the cause only)


class CauseIdle(Frozen):
    cause: IdleCause
    label: str
    idle_ms: float
    percent_of_idle: float
    percent_of_window: float
    by_phase_ms: dict[Phase, float]
    culprits: list[Culprit]
    ranges: TimeRanges | None = None  # its pieces of idle on the trace's clock (MARKS kept)


@dataclass(frozen=True, slots=True)
class Attribution:
    """The idle set split into one interval set per cause, and what named them."""

    pieces: dict[IdleCause, Intervals]
    culprits: dict[IdleCause, pd.DataFrame]  # uid, idle_us per cause's culprit events


# one cause's idle found on one host thread (its code), or on any thread (None)
Found = dict[IdleCause, list[tuple[int | None, Intervals]]]


def attribute(
    model: TraceModel,
    work: GpuWork,
    blocking: BlockingCalls,
    stretches: Stretches,
    phases: PhaseRegions,
    masks: dict[IdleCause, np.ndarray] | None = None,
) -> Attribution:
    """Split `work.idle` into CAUSES (see the module docstring); `masks`: cause_masks(model),
    when the caller has them."""
    masks = cause_masks(model) if masks is None else masks
    ev = model.events
    start = ev["ts"].to_numpy(dtype=np.float64)
    end = start + np.nan_to_num(ev["dur"].to_numpy(dtype=np.float64))
    thread = model.thread_code
    pieces: dict[IdleCause, Intervals] = {}
    profiler = _profiler_region(model, masks, start, end, phases)
    pieces["profiler"] = intersect(work.idle, profiler)
    remaining = subtract(work.idle, profiler)
    pieces["gpu_wait"] = _gpu_wait(work, remaining, end)
    remaining = subtract(remaining, pieces["gpu_wait"])
    owner = _owners(work, remaining, thread)
    global_regions = {"sync": blocking.region, "launch_bound": stretches.region}
    found = _by_thread(remaining, owner, masks, start, end, thread, global_regions)
    for cause, parts in found.items():
        pieces[cause] = _union([piece for _, piece in parts])
    explained = _union(list(pieces.values()))
    pieces["unexplained"] = subtract(work.idle, explained)
    in_tree = np.ones(len(start), dtype=bool)
    # an event that overran the one it started in nests in no one: it would be counted twice
    in_tree[model.tree.dropped] = False
    in_tree[model.tree.bled] = False
    culprits = {
        cause: _charged(
            model, masks[cause] & in_tree, found[cause], start, end, thread, cause in NAMED_BY_NOTES
        )
        for cause in (*_HOST_SIGNATURES, "dispatch")
    }
    culprits["gpu_wait"] = _wait_culprits(model, work, pieces["gpu_wait"], start, thread)
    return Attribution(pieces=pieces, culprits=culprits)


def _profiler_region(
    model: TraceModel,
    masks: dict[IdleCause, np.ndarray],
    start: np.ndarray,
    end: np.ndarray,
    phases: PhaseRegions,
) -> Intervals:
    """Profiler events anywhere, and device-wide synchronises after the last iteration (the
    profiler's closing flush)."""
    marked = masks["profiler"]
    tail = phases.regions["tail"]
    if len(tail):
        names = model.events["name"]
        sync = (
            model.events["cat"].isin(LAUNCH_CATEGORIES).to_numpy()
            & names.isin(
                ["cudaDeviceSynchronize", "hipDeviceSynchronize", "cuCtxSynchronize"]
            ).to_numpy()
        )
        marked = marked | (sync & (length_within(tail, start, end) > 0))
    uids = np.flatnonzero(marked)
    return merge(start[uids], end[uids])


def _ending_launch(work: GpuWork, gaps: Intervals) -> np.ndarray:
    """The launch call uid of the GPU event that ends each gap (-1 when unlinked)."""
    if len(gaps) == 0 or len(work.start) == 0:
        return np.full(len(gaps), MISSING, dtype=np.int64)
    nxt = np.minimum(np.searchsorted(work.start, gaps.end, side="left"), len(work.start) - 1)
    return work.launch[nxt]


def _gpu_wait(work: GpuWork, idle: Intervals, end: np.ndarray) -> Intervals:
    """The idle after each gap's ending event was queued (its launch returned, plus the
    launch latency): from then on the GPU waited on its own work, not on the host."""
    launch = _ending_launch(work, idle)
    linked = launch != MISSING
    queued_at = np.where(linked, end[np.maximum(launch, 0)] + LAUNCH_LATENCY_US, np.inf)
    wait_from = np.maximum(idle.start, queued_at)
    waits = wait_from < idle.end
    return merge(wait_from[waits], idle.end[waits])


def _wait_culprits(
    model: TraceModel, work: GpuWork, waits: Intervals, start: np.ndarray, thread: np.ndarray
) -> pd.DataFrame:
    """What each GPU-side wait's queued event waited for, as the host recorded it: the last
    stream-wait call (`cudaStreamWaitEvent`...) its launching thread made after launching the
    event the gap follows and before launching it; else that launch itself (the operator
    whose kernel sat queued). Runtime calls do not record their stream, so a wait on another
    stream of the same thread in that span is named too: it is the dependency the thread set
    up just before the queued launch."""
    launch = _ending_launch(work, waits)
    linked = launch != MISSING
    if not linked.any():
        return pd.DataFrame({"uid": np.empty(0, np.int64), "idle_us": np.empty(0)})
    launch, length = launch[linked], (waits.end - waits.start)[linked]
    nxt = np.searchsorted(work.start, waits.end[linked], side="left")
    before = work.launch[np.maximum(nxt - 1, 0)]
    lower = np.where((nxt > 0) & (before != MISSING), start[np.maximum(before, 0)], -np.inf)
    names = model.events["name"]
    is_wait = (
        model.events["cat"].isin(LAUNCH_CATEGORIES).to_numpy() & names.isin(STREAM_WAITS).to_numpy()
    )
    calls = np.flatnonzero(is_wait)
    named = launch.copy()
    for code in np.unique(thread[calls]):
        mine = calls[thread[calls] == code]
        mine = mine[np.argsort(start[mine], kind="stable")]
        here = thread[launch] == code
        k = np.searchsorted(start[mine], start[launch[here]], side="left") - 1
        found = (k >= 0) & (start[mine[np.maximum(k, 0)]] > lower[here])
        named[np.flatnonzero(here)[found]] = mine[k[found]]
    table = pd.DataFrame({"uid": named, "idle_us": length})
    return table.groupby("uid", as_index=False)["idle_us"].sum()


def _owners(work: GpuWork, gaps: Intervals, thread: np.ndarray) -> np.ndarray:
    """The host thread each gap belongs to: its ending event's launcher (-1 when unlinked)."""
    launch = _ending_launch(work, gaps)
    return np.where(launch != MISSING, thread[np.maximum(launch, 0)], MISSING)


def _by_thread(
    idle: Intervals,
    owner: np.ndarray,
    masks: dict[IdleCause, np.ndarray],
    start: np.ndarray,
    end: np.ndarray,
    thread: np.ndarray,
    global_regions: dict[IdleCause, Intervals],
) -> Found:
    """Host causes on each gap's launching thread first, then on any thread."""
    order: tuple[IdleCause, ...] = CAUSES[2:-1]
    found: Found = {c: [] for c in order}
    left: list[Intervals] = []
    for code in np.unique(owner):
        mine = owner == code
        gaps = Intervals(idle.start[mine], idle.end[mine])
        if code == MISSING:
            left.append(gaps)
            continue
        on_thread = thread == code
        for cause in order:
            region = _region(cause, masks, on_thread, start, end, global_regions)
            found[cause].append((int(code), intersect(gaps, region)))
            gaps = subtract(gaps, region)
        left.append(gaps)
    rest = _union(left)
    everywhere = np.ones(len(thread), dtype=bool)
    for cause in order:
        if cause == "dispatch":
            continue  # another thread's busy host does not explain an idle launcher
        region = _region(cause, masks, everywhere, start, end, global_regions)
        found[cause].append((None, intersect(rest, region)))
        rest = subtract(rest, region)
    return found


def _region(
    cause: IdleCause,
    masks: dict[IdleCause, np.ndarray],
    on_thread: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    global_regions: dict[IdleCause, Intervals],
) -> Intervals:
    if cause in global_regions:
        return global_regions[cause]
    uids = np.flatnonzero(masks[cause] & on_thread)
    return merge(start[uids], end[uids])


def _union(parts: list[Intervals]) -> Intervals:
    parts = [p for p in parts if len(p)]
    if not parts:
        return Intervals.empty()
    return merge(np.concatenate([p.start for p in parts]), np.concatenate([p.end for p in parts]))


def _charged(
    model: TraceModel,
    mask: np.ndarray,
    parts: list[tuple[int | None, Intervals]],
    start: np.ndarray,
    end: np.ndarray,
    thread: np.ndarray,
    notes_first: bool = False,
) -> pd.DataFrame:
    """The culprit events of one cause: on the thread each part was found on."""
    frames = []
    for code, piece in parts:
        on = mask if code is None else mask & (thread == code)
        frames.append(_culprits(model, on, piece, start, end, notes_first))
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if table.empty:
        return pd.DataFrame({"uid": np.empty(0, np.int64), "idle_us": np.empty(0)})
    return table.groupby("uid", as_index=False)["idle_us"].sum()


def _culprits(
    model: TraceModel,
    mask: np.ndarray,
    piece: Intervals,
    start: np.ndarray,
    end: np.ndarray,
    notes_first: bool = False,
) -> pd.DataFrame:
    """Events of a cause's signature in flight during its idle, each charged only the time
    no event of the same signature nested inside it was (the innermost one names it).

    Calls, operators and frames nest in the host tree; annotations do not, so they are
    charged after them, shortest first, with what no other culprit covered; or before them
    (`notes_first`), where the annotation is the name a user knows (the DataLoader's
    `__next__`, an optimizer's step)."""
    uids = np.flatnonzero(mask)
    if len(piece) == 0 or len(uids) == 0:
        return pd.DataFrame({"uid": np.empty(0, np.int64), "idle_us": np.empty(0)})
    overlap = length_within(piece, start[uids], end[uids])
    hit = overlap > 0
    uids, overlap = uids[hit], overlap[hit]
    note = (model.events["cat"] == "user_annotation").to_numpy()[uids]
    notes = uids[note][np.argsort(end[uids[note]] - start[uids[note]], kind="stable")]
    mine, piece = _charge_notes(notes, piece, start, end) if notes_first else ([], piece)
    if notes_first:
        overlap = length_within(piece, start[uids], end[uids])
    tree_uids, tree_overlap = uids[~note], overlap[~note]
    in_tree = np.zeros(len(mask), dtype=bool)
    in_tree[tree_uids] = True
    above = nearest_ancestor(model.tree.parent, in_tree, tree_uids)
    position = pd.Series(np.arange(len(tree_uids)), index=tree_uids)
    inner = np.zeros(len(tree_uids))
    has = above != MISSING
    np.add.at(inner, position.loc[above[has]].to_numpy(), tree_overlap[has])
    own = [np.maximum(tree_overlap - inner, 0.0)]
    if not notes_first:
        mine, _ = _charge_notes(notes, subtract(piece, merge(start[tree_uids], end[tree_uids])),
                                start, end)  # fmt: skip
    table = pd.DataFrame(
        {"uid": np.concatenate([tree_uids, notes]), "idle_us": np.concatenate([*own, mine])}
    )
    return table[table["idle_us"].to_numpy() > 0]


def _charge_notes(
    notes: np.ndarray, left: Intervals, start: np.ndarray, end: np.ndarray
) -> tuple[list[float], Intervals]:
    """Each annotation (shortest first) charged what of `left` it covers; what is left."""
    charged = []
    for uid in notes:  # few: annotations overlapping a cause's idle
        span = Intervals(start[uid : uid + 1], end[uid : uid + 1])
        charged.append(intersect(left, span).length())
        left = subtract(left, span)
    return charged, left


def culprit_table(
    model: TraceModel, charged: pd.DataFrame, top: int = TOP_CULPRITS, *, by_operator: bool = False
) -> list:
    """The top call sites of a cause's culprit events, most idle first. `by_operator` groups
    by operator (a Python frame outside any operator by its file), each group named by its
    member with the most idle: dispatch spreads over every layer of a model, and split by
    frame no call site stands out."""
    if charged.empty:
        return []
    # only events of the names with the most idle can make the top call sites
    names = model.events["name"].cat.codes.to_numpy()[charged["uid"].to_numpy()]
    by_name = charged.groupby(names)["idle_us"].sum().nlargest(top * 4)
    charged = charged[np.isin(names, by_name.index.to_numpy())]
    sites = call_sites(model, charged["uid"].to_numpy())
    sites["idle_us"] = charged["idle_us"].to_numpy()
    keys = ["call", "operator", "module", "frame"]
    if by_operator:  # the operator (else the call) is the site; the rest its largest member's
        operator = sites["operator"].astype(str)
        source = sites["call"].astype(str).str.replace(FRAME_LINE, "", regex=True)
        sites["site"] = operator.where(operator != "", source)
        keys = ["site"]
    ordered = sites.sort_values("idle_us", ascending=False, kind="stable")
    first = {k: (k, "first") for k in ("call", "operator", "module", "frame") if k not in keys}
    grouped = (
        ordered.groupby(keys, sort=False, dropna=False)
        .agg(count=("idle_us", "size"), idle_us=("idle_us", "sum"), **first)
        .reset_index()
        .sort_values("idle_us", ascending=False)
        .head(top)
    )
    return [
        Culprit(
            name=str(row.call),
            operator=str(row.operator),
            module=str(row.module),
            frame=str(row.frame),
            count=int(row.count),
            idle_ms=float(row.idle_us) / 1e3,
        )
        for row in grouped.itertuples(index=False)
    ]


def cause_table(
    model: TraceModel, attribution: Attribution, work: GpuWork, phases: PhaseRegions
) -> list[CauseIdle]:
    """One row per cause with idle, in CAUSES order."""
    total = work.idle.length()
    window = work.window_us
    rows = []
    for cause in CAUSES:
        piece = attribution.pieces[cause]
        idle = piece.length()
        by_phase = {p: intersect(piece, phases.regions[p]).length() / 1e3 for p in PHASES}
        charged = attribution.culprits.get(cause)
        culprits = (
            culprit_table(model, charged, by_operator=cause == "dispatch")
            if charged is not None
            else []
        )
        rows.append(
            CauseIdle(
                cause=cause,
                label=LABELS[cause],
                idle_ms=idle / 1e3,
                percent_of_idle=100.0 * idle / total if total > 0 else 0.0,
                percent_of_window=100.0 * idle / window if window > 0 else 0.0,
                by_phase_ms=by_phase,
                culprits=culprits,
                ranges=TimeRanges.of(piece.start, piece.end, keep=MARKS),
            )
        )
    return rows
