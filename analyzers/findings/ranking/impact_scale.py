"""One impact scale for every finding (docs/analysis.md#one-impact-scale).

Compute findings, kernel-fusion candidates and system findings each become a `PriorityItem`
whose saving is given low / mid / high in ms and in % of the analysed window, and capped by the
time it could physically recover: a finding never saves more than its kernels ran, or the GPU
waited. Items are ranked together by their mid saving and numbered P1, P2, ... once for the whole
report. A finding whose operations have no usable roofline (unmodelled, or above 110 % of it) is
an unquantified item: no saving, the reason instead, ranked after every quantified item and
never in the totals, the plot or the top fixes (docs/analysis.md#unquantified-items).
`SavingTotals` adds the quantified ones up without double counting: each
item draws on one pool of the window (kernel time, idle time, exposed copies, exposed
communication), and a pool gives out no more than it holds.

A window shorter than `MIN_WINDOW_US` of GPU time has nothing to rank
(docs/trace.md#windows-too-short-to-rank): its kernels' times are a few timestamp ticks each, and a
saving of "85-114 % of the window" from one 1.76 µs kernel is noise, not an estimate. Such a
run has no item and says why (`nothing_to_rank`). No share of the window is ever above
100 %: a saving's percentages are clamped to the window it is a share of.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from ...prepare.categories import GpuUtilization
from ...trace.time_ranges import TimeRanges
from .replay_figures import ReplayPrice

Pool = Literal["kernels", "idle", "exposed_memcpy", "exposed_comm"]
Kind = Literal["compute", "kernel_fusion", "system"]
Method = Literal["quantified", "unquantified"]
POOLS: tuple[Pool, ...] = ("kernels", "idle", "exposed_memcpy", "exposed_comm")
# Shorter GPU windows have nothing to rank: at 1 µs timestamp resolution and several µs of
# launch latency, a window under 20 µs (a handful of tiny kernels) measures noise. The
# smallest real microbenchmark window the project reads (one 40 µs convolution) stays ranked.
MIN_WINDOW_US = 20.0
_POOL_SHARE = {  # the gpu_timeline share each pool holds
    "kernels": "computation_time_percent",
    "idle": "idle_time_percent",
    "exposed_memcpy": "exposed_memcpy_time_percent",
    "exposed_comm": "exposed_comm_time_percent",
}


class Saving(BaseModel):
    """What one finding could save, in ms, never above `cap_ms` and with low <= mid <= high."""

    model_config = ConfigDict(frozen=True)

    low_ms: float
    mid_ms: float
    high_ms: float
    cap_ms: float
    pool: Pool
    basis: str  # one sentence: how the range was computed

    @model_validator(mode="before")
    @classmethod
    def _capped(cls, data: dict) -> dict:
        cap = max(0.0, float(data["cap_ms"]))
        low, mid, high = (min(cap, max(0.0, float(data[k]))) for k in _RANGE)
        mid = max(low, mid)
        high = max(mid, high)
        return {**data, "cap_ms": cap, "low_ms": low, "mid_ms": mid, "high_ms": high}

    def percent(self, window_ms: float) -> tuple[float, float, float]:
        """(low, mid, high) as % of the analysed window."""
        if window_ms <= 0:
            return (0.0, 0.0, 0.0)
        return tuple(round(min(v, window_ms) / window_ms * 100, 2) for v in self.range_ms)  # type: ignore[return-value]

    @property
    def range_ms(self) -> tuple[float, float, float]:
        return (self.low_ms, self.mid_ms, self.high_ms)


_RANGE = ("low_ms", "mid_ms", "high_ms")


class Candidate(BaseModel):
    """A finding before ranking: where it comes from, what it is, what it could save (None,
    with `unquantified_reason`, when the trace cannot support a number)."""

    model_config = ConfigDict(frozen=True)

    category: str
    kind: Kind
    title: str  # Markdown: names from the trace or a user file are code spans (md_code)
    estimate_method: Method
    saving: Saving | None
    source_rank: int | None = None  # its rank among its own category's findings
    unquantified_reason: str | None = None
    time_ms: float | None = None  # kernel time an unquantified finding covers (its rank)
    replay: ReplayPrice | None = None  # what the replay says of it (None: no events placed)
    time_ranges: TimeRanges | None = None  # where in the trace it happens (None: not placed)

    @model_validator(mode="after")
    def _saving_or_reason(self) -> Candidate:
        if (self.saving is None) != (self.estimate_method == "unquantified"):
            raise ValueError("an unquantified finding has no saving, every other one has one")
        if self.saving is None and not self.unquantified_reason:
            raise ValueError("an unquantified finding says why it has no saving")
        return self


class PriorityItem(Candidate):
    """A ranked finding: its report-wide P-number and its saving in % of the window (None
    for an unquantified item)."""

    p_number: int
    percent_low: float | None
    percent_mid: float | None
    percent_high: float | None

    @property
    def quantified(self) -> bool:
        return self.saving is not None


class SavingTotals(BaseModel):
    """What all quantified items together could save, each pool counted at most once, and
    an item whose kernels a higher-ranked item already covers not at all (`counted_in`:
    its P-number -> that item's)."""

    low_ms: float
    mid_ms: float
    high_ms: float
    percent_mid: float
    by_pool_mid_ms: dict[str, float]
    pool_ms: dict[str, float]
    counted_in: dict[int, int] = {}


def pool_sizes(gpu: GpuUtilization) -> dict[Pool, float]:
    """How many ms of the window each pool holds."""
    return {p: gpu.total_time_ms * getattr(gpu, _POOL_SHARE[p]) / 100 for p in POOLS}


def nothing_to_rank(gpu: GpuUtilization) -> str | None:
    """Why the run's window is too short to rank anything, or None when it is not."""
    window_us = gpu.total_time_ms * 1e3
    if window_us >= MIN_WINDOW_US:
        return None
    return (
        f"Nothing to rank: the analysed window is {window_us:.2f} µs of GPU time, under the "
        f"{MIN_WINDOW_US:g} µs a ranking needs (kernel times are a few timestamp ticks and "
        "launch latencies long, so any saving would be noise). Profile at least one whole "
        "step of the workload."
    )


def rank_items(candidates: Iterable[Candidate], window_ms: float) -> list[PriorityItem]:
    """Quantified items by mid saving (then high, then the flat estimate a replayed saving
    replaced, then category), then the unquantified ones by the kernel time they cover."""
    order = sorted(
        candidates,
        key=lambda c: (
            c.saving is None,
            -c.saving.mid_ms if c.saving else -(c.time_ms or 0.0),
            -c.saving.high_ms if c.saving else 0.0,
            -_flat_mid(c),  # replayed alike (off the path): what each would buy later
            c.category,
            c.source_rank or 0,
        ),
    )
    items = []
    for number, candidate in enumerate(order, start=1):
        low, mid, high = candidate.saving.percent(window_ms) if candidate.saving else (None,) * 3
        items.append(
            PriorityItem(
                **dict(candidate),
                p_number=number,
                percent_low=low,
                percent_mid=mid,
                percent_high=high,
            )
        )
    return items


def _flat_mid(c: Candidate) -> float:
    return c.replay.flat_mid_ms or 0.0 if c.replay is not None else 0.0


def totals(
    items: Iterable[PriorityItem],
    gpu: GpuUtilization,
    counted_in: Mapping[int, int] | None = None,
) -> SavingTotals:
    """Sum the quantified items in rank order, each taking from its pool what is left; an
    item in `counted_in` (P-number -> the item whose kernels cover its own) adds nothing."""
    sizes = pool_sizes(gpu)
    left = {bound: dict.fromkeys(POOLS, 0.0) | sizes for bound in _RANGE}
    taken = {bound: 0.0 for bound in _RANGE}
    by_pool = dict.fromkeys(POOLS, 0.0)
    skipped = dict(counted_in or {})
    for item in items:
        if item.saving is None or item.p_number in skipped:
            continue
        for bound, value in zip(_RANGE, item.saving.range_ms, strict=True):
            share = min(value, left[bound][item.saving.pool])
            left[bound][item.saving.pool] -= share
            taken[bound] += share
            if bound == "mid_ms":
                by_pool[item.saving.pool] += share
    window = gpu.total_time_ms
    return SavingTotals(
        low_ms=round(taken["low_ms"], 3),
        mid_ms=round(taken["mid_ms"], 3),
        high_ms=round(taken["high_ms"], 3),
        percent_mid=round(min(taken["mid_ms"], window) / window * 100, 2) if window > 0 else 0.0,
        by_pool_mid_ms={p: round(v, 3) for p, v in by_pool.items()},
        pool_ms={p: round(v, 3) for p, v in sizes.items()},
        counted_in=skipped,
    )
