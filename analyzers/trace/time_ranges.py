"""Where in the trace a finding happens: its time ranges on the trace's own clock (µs, the
`ts` of its events), so a reader can find it in a trace viewer (docs/trace-viewer.md).

A finding may cover thousands of kernel instances or idle gaps; `TimeRanges` keeps how many
there are, their summed length, the span from the first to the last, and only the longest
few, in time order. `brief` trims that further for a model's context.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

KEPT = 12  # ranges a finding keeps in the run's files (the longest)
MARKS = 2000  # ranges a track of the annotated trace shows (docs/trace-viewer.md)
BRIEF = 3  # ranges a tool result or a report line shows


class TimeRange(BaseModel):
    """One range on the trace's clock, in µs."""

    model_config = ConfigDict(frozen=True)

    start_us: float
    end_us: float

    @property
    def dur_us(self) -> float:
        return self.end_us - self.start_us


class TimeRanges(BaseModel):
    """A finding's ranges: `count` of them in all, `total_us` long together, spanning
    `first_us`..`last_us`; `longest` holds the longest (at most KEPT), in time order."""

    model_config = ConfigDict(frozen=True)

    count: int
    total_us: float
    first_us: float
    last_us: float
    longest: list[TimeRange]

    @classmethod
    def of(cls, start: np.ndarray, end: np.ndarray, keep: int = KEPT) -> TimeRanges | None:
        """The ranges [start, end] (any order; empty ones dropped); None when there are none."""
        start = np.asarray(start, dtype=np.float64)
        end = np.asarray(end, dtype=np.float64)
        live = end > start
        start, end = start[live], end[live]
        if start.size == 0:
            return None
        dur = end - start
        top = np.argsort(-dur, kind="stable")[:keep]
        top = top[np.argsort(start[top], kind="stable")]
        return cls(
            count=int(start.size),
            total_us=round(float(dur.sum()), 3),
            first_us=float(start.min()),
            last_us=float(end.max()),
            longest=[TimeRange(start_us=float(start[k]), end_us=float(end[k])) for k in top],
        )

    def brief(self, keep: int = BRIEF) -> TimeRanges:
        """The same ranges with only the `keep` longest listed."""
        if len(self.longest) <= keep:
            return self
        top = sorted(self.longest, key=lambda r: -r.dur_us)[:keep]
        return self.model_copy(update={"longest": sorted(top, key=lambda r: r.start_us)})
