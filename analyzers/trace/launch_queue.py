"""How far ahead of the GPU the host ran: launch-to-start delay per GPU event and the depth of
the launch queue (events launched and not yet finished) when each was launched.

A GPU that idles while its next event is already queued was not waiting on the host; a deep
queue means the host is ahead and host-side fixes buy nothing until the GPU is faster.
Definitions: docs/analysis.md#launch-queue.
"""

from __future__ import annotations

import numpy as np

from .idle_window import GpuWork
from .iterations import Frozen

# CUDA's and HIP's per-device launch queues hold about a thousand entries; a queue this deep
# at most launches means the host waits for room, not the GPU for work
FULL_QUEUE_DEPTH = 900
DEEP_QUEUE_DEPTH = 64


class LaunchQueue(Frozen):
    """Launch-to-start delay and queue depth over the linked GPU events (None without any)."""

    events: int
    median_delay_us: float
    p90_delay_us: float
    median_depth: float
    p90_depth: float
    max_depth: int
    full: bool  # the queue was near its capacity for most launches
    deep: bool  # the host ran well ahead of the GPU for most launches


def depth_at(launch_ts: np.ndarray, end: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Events launched at or before each time and not yet finished (launch_ts sorted)."""
    ends = np.sort(end)
    return np.searchsorted(launch_ts, at, side="right") - np.searchsorted(ends, at, side="right")


def launch_queue(work: GpuWork) -> LaunchQueue | None:
    linked = ~np.isnan(work.launch_ts)
    if not linked.any():
        return None
    launch_ts = work.launch_ts[linked]
    start, end = work.start[linked], work.end[linked]
    order = np.argsort(launch_ts, kind="stable")
    sorted_launch = launch_ts[order]
    # an event counts itself once launched: depth 1 is an empty queue taking one event
    depth = depth_at(sorted_launch, end[order], sorted_launch)
    delay = np.maximum(start - launch_ts, 0.0)
    median_depth = float(np.median(depth))
    p90_depth = float(np.percentile(depth, 90))
    return LaunchQueue(
        events=int(linked.sum()),
        median_delay_us=float(np.median(delay)),
        p90_delay_us=float(np.percentile(delay, 90)),
        median_depth=median_depth,
        p90_depth=p90_depth,
        max_depth=int(depth.max()),
        full=median_depth >= FULL_QUEUE_DEPTH,
        deep=median_depth >= DEEP_QUEUE_DEPTH,
    )
