"""Host call tree: parent of every host event by time nesting per thread.

See docs/trace.md#host-call-tree.

The tree is stored as one integer column, `parent` (uid of the enclosing event, or -1), as
HTA does, never as nested objects. GPU events hang under their launch. Ancestor queries
("nearest cpu_op above", "innermost nn.Module") are vectorised pointer walks over that column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .columns import MISSING
from .schema import HOST_TREE_CATEGORIES

BLEED_TOLERANCE_US = 1.0
BleedPolicy = Literal["drop", "adopt"]


@dataclass(frozen=True, slots=True)
class HostTree:
    """`parent` per uid, and the host events whose end overran their enclosing event."""

    parent: np.ndarray
    bled: np.ndarray  # uids of events that ended after the event they started in
    dropped: np.ndarray  # the subset left out of the tree (policy "drop")


def build_host_tree(
    events: pd.DataFrame, launch: np.ndarray, *, bleed: BleedPolicy = "drop"
) -> HostTree:
    """Nest host events per (pid, tid) by time and hang GPU events under their launch.

    An event that starts inside the current top but ends after it is a "bleed". If the
    overlap is under 1 µs and the stack is at least two deep, the top is closed and the
    event becomes its sibling (launch calls that start a few hundred ns early). Otherwise
    policy "drop" leaves it out of the tree (TraceLens) and "adopt" keeps it as a child of
    the event it started in (see docs/deviations.md).
    """
    host = np.flatnonzero(events["cat"].isin(HOST_TREE_CATEGORIES).to_numpy())
    ts = events["ts"].to_numpy()
    end = ts + np.nan_to_num(events["dur"].to_numpy())
    pid = events["pid"].to_numpy()[host]
    tid = events["tid"].to_numpy()[host]
    # group by thread, then by start time; lexsort is stable so ties keep file order
    order = host[np.lexsort((ts[host], tid, pid))]
    pid_s, tid_s = events["pid"].to_numpy()[order], events["tid"].to_numpy()[order]
    new_thread = np.ones(len(order), dtype=bool)
    new_thread[1:] = (pid_s[1:] != pid_s[:-1]) | (tid_s[1:] != tid_s[:-1])

    parent_of, bled, dropped = _nest(
        order.tolist(), new_thread.tolist(), ts[order].tolist(), end[order].tolist(), bleed
    )
    parent = np.full(len(events), MISSING, dtype=np.int64)
    parent[order] = parent_of
    has_launch = launch != MISSING
    parent[has_launch] = launch[has_launch]
    return HostTree(
        parent=parent, bled=np.array(bled, np.int64), dropped=np.array(dropped, np.int64)
    )


def _nest(
    uids: list[int], new_thread: list[bool], ts: list[float], end: list[float], bleed: BleedPolicy
) -> tuple[list[int], list[int], list[int]]:
    """The stack walk: plain lists and locals, because this is the one per-event Python loop."""
    parents: list[int] = []
    add_parent = parents.append
    bled: list[int] = []
    dropped: list[int] = []
    stack_uid: list[int] = []
    stack_end: list[float] = []
    drop = bleed == "drop"
    for uid, new, start, stop in zip(uids, new_thread, ts, end, strict=True):
        if new:
            stack_uid = []
            stack_end = []
        while stack_end and stack_end[-1] <= start:
            stack_uid.pop()
            stack_end.pop()
        if stack_end and stop > stack_end[-1]:
            bled.append(uid)
            if stack_end[-1] - start < BLEED_TOLERANCE_US and len(stack_end) >= 2:
                stack_uid.pop()
                stack_end.pop()
            elif drop:
                dropped.append(uid)
                add_parent(MISSING)
                continue
        add_parent(stack_uid[-1] if stack_uid else MISSING)
        stack_uid.append(uid)
        stack_end.append(stop)
    return parents, bled, dropped


def nearest_ancestor(parent: np.ndarray, mask: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """For each node, the closest proper ancestor whose `mask` is true, or -1."""
    result = np.full(len(nodes), MISSING, dtype=np.int64)
    position = np.arange(len(nodes))
    current = parent[nodes]
    alive = current != MISSING
    position, current = position[alive], current[alive]
    while len(position):
        hit = mask[current]
        result[position[hit]] = current[hit]
        position, current = position[~hit], parent[current[~hit]]
        alive = current != MISSING
        position, current = position[alive], current[alive]
    return result


def ancestors(parent: np.ndarray, uid: int) -> list[int]:
    """Path from the event's parent up to its root (one event: a short Python walk)."""
    chain: list[int] = []
    node = int(parent[uid])
    while node != MISSING:
        chain.append(node)
        node = int(parent[node])
    return chain
