"""CUPTI range-profiler traces: per-kernel hardware counters, no timeline
(docs/trace.md#range-profiler-traces).

The CUPTI range profiler replays every kernel and records one `cuda_profiler_range` event per
kernel whose args are counter values (`smsp__sass_thread_inst_executed_op_ffma_pred_on.sum`,
...); no kernel, copy or set event exists, and the ranges' durations are replay time, laid
back to back, not a timeline. Such a trace cannot be ranked on a GPU timeline, but it is not
empty either: `RangeCounters` says what it holds, and the refusal quotes it instead of "no GPU
events".

FLOPs come from the SASS FLOP instruction counters, as Nsight Compute derives them: a fused
multiply-add counts two operations, an add or a multiply one; `d*` is fp64, `f*` fp32, `h*`
fp16. Only the ranges' args are decoded (a few per kernel), never the rest of the trace's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

RANGE_CATEGORY = "cuda_profiler_range"
SASS_FLOP = re.compile(r"smsp__sass_thread_inst_executed_op_([dfh])(add|fma|mul)_pred_on\.sum")
PRECISION = {"d": "fp64", "f": "fp32", "h": "fp16"}
_ARGS = msgspec.json.Decoder(dict[str, Any])


class RangeCounters(BaseModel):
    """What a range-profiler trace holds: its kernels (ranges), the counters they carry and
    the FLOPs the SASS instruction counters give, by precision."""

    model_config = ConfigDict(frozen=True)

    ranges: int  # one per replayed kernel
    kernels: int  # distinct kernel names
    counters: list[str]  # the counter names recorded (sorted)
    flop_instructions: int  # SASS FLOP instructions over every range
    flops: dict[str, int]  # fp64 / fp32 / fp16 -> FLOPs (an FMA counts two)
    replay_ms: float  # the ranges' summed durations: replay time, not kernel time

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())

    def describe(self) -> str:
        """One sentence: what the file is and the totals its counters give."""
        text = (
            f"per-kernel hardware counters, no timeline: {self.ranges} kernels "
            f"({self.kernels} distinct) recorded by the CUPTI range profiler "
            f"({RANGE_CATEGORY} events) carrying {len(self.counters)} counters"
        )
        if self.flop_instructions:
            total = self.total_flops
            split = ", ".join(
                f"{100 * n / total:.1f} % {p}" for p, n in self.flops.items() if n and total
            )
            text += (
                f"; FLOP instruction counts give {self.flop_instructions:,} SASS FLOP "
                f"instructions, {total / 1e9:.3f} GFLOP ({split or 'none'})"
            )
        return text + f"; the ranges' {self.replay_ms:.3f} ms are replay time, not a timeline"


def read_range_counters(raws: Sequence[Any], events: pd.DataFrame) -> RangeCounters | None:
    """The counters of the `cuda_profiler_range` events in `events` (indexed by position in
    `raws`, the undecoded `traceEvents`), or None when there is none."""
    ranges = events.index[(events["cat"] == RANGE_CATEGORY).to_numpy()]
    if not len(ranges):
        return None
    totals: dict[str, float] = {}
    for uid in ranges:
        for key, value in _args(raws[int(uid)]).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[key] = totals.get(key, 0.0) + float(value)
    flops = dict.fromkeys(PRECISION.values(), 0)
    instructions = 0
    for key, count in totals.items():
        if (m := SASS_FLOP.fullmatch(key)) and np.isfinite(count) and count >= 0:
            instructions += int(count)
            flops[PRECISION[m.group(1)]] += int(count) * (2 if m.group(2) == "fma" else 1)
    rows = events.loc[ranges]
    return RangeCounters(
        ranges=len(ranges),
        kernels=int(rows["name"].nunique()),
        counters=sorted(totals),
        flop_instructions=instructions,
        flops=flops,
        replay_ms=round(float(np.nansum(rows["dur"].to_numpy(dtype=float))) / 1e3, 3),
    )


def _args(raw: Any) -> dict[str, Any]:
    """The `args` object of one raw event ({} when absent or not an object)."""
    try:
        event = _ARGS.decode(raw)
    except (msgspec.DecodeError, TypeError):
        return {}
    args = event.get("args")
    return args if isinstance(args, dict) else {}
