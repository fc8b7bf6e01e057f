"""Launch-bound stretches: many short GPU events, each waiting for the host to launch it.

An idle gap is a launch gap when it is short (at most LAUNCH_GAP_MAX_US) and the GPU event
that ends it started within LAUNCH_PROMPT_US of its launch call: the queue was empty and
the GPU was waiting for that launch. A stretch is a maximal run of consecutive launch gaps;
it is launch-bound when it holds at least MIN_STRETCH_EVENTS GPU events whose median length
is at most SHORT_EVENT_US. See docs/analysis.md#launch-bound-stretches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .idle_window import GpuWork
from .intervals import Intervals

LAUNCH_GAP_MAX_US = 100.0  # longer gaps are the host doing something besides launching
LAUNCH_PROMPT_US = 50.0  # start - launch call start: launch latency only, nothing queued
MIN_STRETCH_EVENTS = 32  # "many": fewer are a short burst, not a launch-bound stretch
SHORT_EVENT_US = 20.0  # median GPU event length at most this: launch cost dominates


@dataclass(frozen=True, slots=True)
class Stretches:
    """One row per launch-bound stretch, and the idle gaps inside them."""

    table: pd.DataFrame  # start, end, events, idle_us, median_event_us, median_gap_us
    region: Intervals


def launch_gaps(work: GpuWork) -> np.ndarray:
    """Per idle gap of `work`, whether it is a launch gap."""
    idle = work.idle
    if len(idle) == 0:
        return np.zeros(0, dtype=bool)
    # idle gap i lies between busy[i] and busy[i + 1]; the event that ends it is the first
    # event of busy[i + 1] (idle_window.py keeps the three aligned)
    nxt = work.first[1:]
    delay = work.start[nxt] - work.launch_ts[nxt]  # NaN when unlinked: never a launch gap
    short = (idle.end - idle.start) <= LAUNCH_GAP_MAX_US
    with np.errstate(invalid="ignore"):
        return short & (delay <= LAUNCH_PROMPT_US)


def _ranges(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All indices of the ranges [starts[k], stops[k]) and the k each belongs to."""
    lengths = (stops - starts).astype(np.int64)
    run = np.repeat(np.arange(len(lengths)), lengths)
    offset = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.repeat(starts, lengths).astype(np.int64) + offset, run


def launch_bound_stretches(work: GpuWork) -> Stretches:
    """Runs of launch gaps that qualify as launch-bound (see the module docstring)."""
    gap = launch_gaps(work)
    empty = pd.DataFrame(
        columns=["start", "end", "events", "idle_us", "median_event_us", "median_gap_us"]
    )
    if not gap.any():
        return Stretches(table=empty, region=Intervals.empty())
    # run id per gap: consecutive launch gaps share one
    edges = np.diff(np.concatenate([[0], gap.astype(np.int8), [0]]))
    first_gap = np.flatnonzero(edges == 1)
    last_gap = np.flatnonzero(edges == -1) - 1
    busy = work.busy
    # the stretch runs from busy[first_gap] to busy[last_gap + 1]
    first_event, _ = work.run_events(first_gap)
    _, after_last = work.run_events(last_gap + 1)
    events = after_last - first_event
    index, run = _ranges(first_event, after_last)
    durations = pd.Series(work.end[index] - work.start[index])
    median_event = durations.groupby(run).median().to_numpy()
    gap_len = work.idle.end - work.idle.start
    gap_index, gap_run = _ranges(first_gap, last_gap + 1)
    gaps = pd.Series(gap_len[gap_index]).groupby(gap_run)
    table = pd.DataFrame(
        {
            "start": busy.start[first_gap],
            "end": busy.end[last_gap + 1],
            "events": events,
            "idle_us": gaps.sum().to_numpy(),
            "median_event_us": median_event,
            "median_gap_us": gaps.median().to_numpy(),
            "first_gap": first_gap,
            "last_gap": last_gap,
        }
    )
    keep = (table["events"] >= MIN_STRETCH_EVENTS) & (table["median_event_us"] <= SHORT_EVENT_US)
    table = table[keep.to_numpy()].reset_index(drop=True)
    chosen, _ = _ranges(table["first_gap"].to_numpy(), table["last_gap"].to_numpy() + 1)
    region = Intervals(work.idle.start[chosen], work.idle.end[chosen])
    return Stretches(table=table.drop(columns=["first_gap", "last_gap"]), region=region)
