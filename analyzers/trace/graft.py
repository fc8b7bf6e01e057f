"""Graft capture-time operators under replayed graph launches (docs/trace.md#graph-capture-merge).

For each graph launch of the replay, the kernels it replayed are paired with the launches of
one capture window, and the window's operators (every ancestor of a paired launch that
started inside the window: `cpu_op`s with shapes, Python frames, the runtime launch) are
copied under the graph launch as new rows at the end of the events table. Each replayed
kernel then hangs under its capture-time launch, so launcher, category and perf model come
from the operator that put it in the graph.

Pairing is by kernel name, not by position: the capture launches are walked in order and
each takes the earliest unpaired replayed kernel of the same name. That is exact for a
single-stream graph and tolerates the reordering of a multi-stream one (two same-named
kernels on different streams may swap; they are the same kernel). A window pairs with a
replay only when every replayed kernel finds a launch; capture launches left over are
allowed (a capture may record a copy the replay profile does not show). When the runtime did
not record kernel names, a window pairs only if it has exactly as many launches, by position.

Which window: the capture with the smallest batch size at least the iteration's (vLLM pads a
batch up to the next captured size), preferring the capture whose mode fits the number of
graph launches in the iteration (one: FULL; several: PIECEWISE), and within a capture the
window at the same position as the launch in its iteration (piece `i` of a piecewise graph).

Grafted rows take the graph launch's thread, start and duration (their own CPU times belong
to the capture run, not this one), and no correlation, flow or sequence ids, so they link
to nothing else. `recorded_events` in the model marks where they start.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .capture import CaptureTrace, Window, gpu_key
from .columns import MISSING, concat_rows
from .schema import GRAPH_LAUNCH_NAMES

# iteration annotations that carry the batch (token) count the graph was chosen for
ITERATION_BATCH = (
    re.compile(r"^execute_diffusion_(\d+)_"),  # xDiT
    re.compile(r"^execute_(\d+)_context_"),  # vLLM
    re.compile(r"^step\[\w+[^\]]*?\bbs=(\d+)"),  # SGLang
    re.compile(r"^(?:prefill|decode)\[[^\]]*?\bbs=(\d+)"),  # ATOM
)
UNLINKED_COLUMNS = (
    "flow_id",
    "correlation",
    "external_id",
    "seq",
    "fwd_thread",
    "python_id",
    "python_parent_id",
)


@dataclass(frozen=True)
class CaptureMerge:
    """What the merge did, for trace health and the report notes."""

    folder: str
    captures: tuple[
        tuple[str, int | None, str, str, int], ...
    ]  # file, batch, mode, source, windows
    graph_launches: int
    merged_launches: int
    merged_gpu_events: int
    added_events: int
    problems: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class Grafted:
    events: pd.DataFrame
    launch: np.ndarray
    parent: np.ndarray
    merge: CaptureMerge


@dataclass(frozen=True)
class _Piece:
    """A window's grafted rows: capture uids, parent position within them, launch positions."""

    rows: np.ndarray
    rel_parent: np.ndarray  # index into rows, or -1 for a top-level row
    launch_pos: np.ndarray  # for replayed GPU event j, the row of its capture-time launch


def graft_captures(
    events: pd.DataFrame,
    launch: np.ndarray,
    parent: np.ndarray,
    captures: Sequence[CaptureTrace],
    folder: str,
) -> Grafted:
    """Copy capture-time operators under every graph launch that pairs with a window."""
    replays = _graph_replays(events, launch)
    batch, position, single = _iterations(events, replays)
    cache: dict[tuple[int, int, tuple[str, ...]], _Piece | None] = {}
    problems: Counter[str] = Counter()
    grafts: list[tuple[int, int, _Piece, np.ndarray]] = []  # capture, graph launch, piece, gpu
    for g, gpu in replays.items():
        keys = tuple(gpu_key(c, n) for c, n in zip(*_cat_name(events, gpu), strict=True))
        found = None
        candidates = _candidates(captures, batch[g], single[g], position[g])
        for ci, wi in candidates:
            key = (ci, wi, keys)
            if key not in cache:
                cache[key] = _pair(captures[ci], captures[ci].windows[wi], keys)
            if (found := cache[key]) is not None:
                grafts.append((ci, g, found, gpu))
                break
        if found is None:
            problems[_why(len(keys), batch[g], candidates)] += 1

    new_events, new_parent = _append_rows(events, parent, captures, grafts)
    new_launch = np.concatenate([launch, np.full(len(new_events) - len(events), MISSING)])
    merge = CaptureMerge(
        folder=folder,
        captures=tuple((c.file, c.batch_size, c.mode, c.source, len(c.windows)) for c in captures),
        graph_launches=len(replays),
        merged_launches=len(grafts),
        merged_gpu_events=sum(len(gpu) for *_, gpu in grafts),
        added_events=len(new_events) - len(events),
        problems=tuple(f"{n} graph launch(es): {why}" for why, n in problems.items()),
    )
    return Grafted(events=new_events, launch=new_launch, parent=new_parent, merge=merge)


def _cat_name(events: pd.DataFrame, uids: np.ndarray) -> tuple[list[str], list[str]]:
    return (
        events["cat"].to_numpy()[uids].astype(str).tolist(),
        events["name"].to_numpy()[uids].astype(str).tolist(),
    )


def _graph_replays(events: pd.DataFrame, launch: np.ndarray) -> dict[int, np.ndarray]:
    """Graph launch uid -> the GPU events it replayed, by start time (launches by time)."""
    owned = np.flatnonzero(launch != MISSING)
    names = events["name"].to_numpy()[launch[owned]].astype(str)
    owned = owned[np.isin(names, list(GRAPH_LAUNCH_NAMES))]
    if not len(owned):
        return {}
    ts = events["ts"].to_numpy()
    owned = owned[np.lexsort((ts[owned], launch[owned]))]
    owners, starts = np.unique(launch[owned], return_index=True)
    groups = np.split(owned, starts[1:])
    order = np.argsort(ts[owners], kind="stable")
    return {int(owners[i]): groups[i] for i in order}


def _iterations(
    events: pd.DataFrame, replays: dict[int, np.ndarray]
) -> tuple[dict[int, int | None], dict[int, int], dict[int, bool]]:
    """Per graph launch: the batch of its iteration, its rank there, and if it is alone."""
    ann = events.loc[(events["cat"] == "user_annotation").to_numpy(), ["name", "ts", "dur"]]
    roots = []  # (start, end, batch)
    for name, ts, dur in ann.itertuples(index=False):
        for pattern in ITERATION_BATCH:
            if m := pattern.match(str(name)):
                roots.append((float(ts), float(ts) + float(np.nan_to_num(dur)), int(m.group(1))))
                break
    roots.sort()
    starts = [r[0] for r in roots]
    ts = events["ts"].to_numpy()
    batch: dict[int, int | None] = {}
    root_of: dict[int, int] = {}
    for g in replays:
        i = int(np.searchsorted(starts, ts[g], side="right")) - 1
        while i >= 0 and roots[i][1] < ts[g]:
            i -= 1
        root_of[g] = i  # -1: no iteration annotation; all such launches form one group
        batch[g] = roots[i][2] if i >= 0 else None
    members: dict[int, list[int]] = {}
    for g in replays:  # replays are in time order
        members.setdefault(root_of[g], []).append(g)
    position = {g: group.index(g) for group in members.values() for g in group}
    single = {g: len(members[root_of[g]]) == 1 for g in replays}
    return batch, position, single


def _candidates(
    captures: Sequence[CaptureTrace], batch: int | None, single: bool, position: int
) -> list[tuple[int, int]]:
    """(capture, window) pairs to try, best first; captures too small are left out."""

    def fits(c: CaptureTrace) -> bool:
        return batch is None or c.batch_size is None or c.batch_size >= batch

    order = sorted(
        (i for i, c in enumerate(captures) if fits(c)),
        key=lambda i: (
            captures[i].single_graph != single,
            captures[i].batch_size if captures[i].batch_size is not None else 0,
        ),
    )
    out = []
    for i in order:
        n = len(captures[i].windows)
        first = [position] if position < n else []
        out.extend((i, w) for w in first + [w for w in range(n) if w != position])
    return out


def _why(n_kernels: int, batch: int | None, candidates: list[tuple[int, int]]) -> str:
    if not candidates:
        return f"no capture trace has a batch size of at least {batch}"
    return (
        f"the {n_kernels} replayed GPU events did not pair, by kernel name, with the launches "
        "of any capture window (was the capture recorded with the same model and settings?)"
    )


def _pair(capture: CaptureTrace, window: Window, keys: tuple[str, ...]) -> _Piece | None:
    """Pair replayed events with the window's launches; None when some event finds none."""
    if all(k is None for k in window.keys):
        if len(window.keys) != len(keys):
            return None
        match = np.arange(len(keys))
    else:
        queues: dict[str, deque[int]] = {}
        for j, k in enumerate(keys):
            queues.setdefault(k, deque()).append(j)
        match = np.full(len(keys), MISSING, dtype=np.int64)
        for i, k in enumerate(window.keys):
            queue = queues.get(k) if k is not None else None
            if queue:
                match[queue.popleft()] = i
        if (match == MISSING).any():
            return None
    launches = window.launches[match]
    rows = _with_ancestors(capture, window, launches)
    pos = np.searchsorted(rows, capture.parent[rows])
    pos = np.minimum(pos, len(rows) - 1)
    inside = (capture.parent[rows] != MISSING) & (rows[pos] == capture.parent[rows])
    return _Piece(
        rows=rows,
        rel_parent=np.where(inside, pos, MISSING),
        launch_pos=np.searchsorted(rows, launches),
    )


def _with_ancestors(capture: CaptureTrace, window: Window, launches: np.ndarray) -> np.ndarray:
    """The launches and every ancestor that started inside the window, sorted by uid."""
    ts = capture.events["ts"].to_numpy()
    keep = [np.unique(launches)]
    frontier = keep[0]
    while len(frontier):
        up = capture.parent[frontier]
        up = up[up != MISSING]
        up = np.unique(up[ts[up] >= window.start])
        frontier = np.setdiff1d(up, np.concatenate(keep), assume_unique=True)
        keep.append(frontier)
    return np.unique(np.concatenate(keep))


def _append_rows(
    events: pd.DataFrame,
    parent: np.ndarray,
    captures: Sequence[CaptureTrace],
    grafts: list[tuple[int, int, _Piece, np.ndarray]],
) -> tuple[pd.DataFrame, np.ndarray]:
    """The events table and parent column with every graft's rows appended."""
    if not grafts:
        return events, parent
    parent = parent.copy()
    ts, dur = events["ts"].to_numpy(), events["dur"].to_numpy()
    pid, tid = events["pid"].to_numpy(), events["tid"].to_numpy()
    blocks, parents = [], []
    base = len(events)
    for ci, g, piece, gpu in grafts:
        block = captures[ci].events.iloc[piece.rows]
        n = len(block)
        block = block.assign(
            pid=pid[g], tid=tid[g], ts=ts[g], dur=dur[g], **dict.fromkeys(UNLINKED_COLUMNS, MISSING)
        )
        blocks.append(block)
        parents.append(np.where(piece.rel_parent != MISSING, base + piece.rel_parent, g))
        parent[gpu] = base + piece.launch_pos
        base += n
    return concat_rows(events, blocks), np.concatenate([parent, *parents])
