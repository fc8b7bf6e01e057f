"""`category_data/multi_kernel_data.json`: memcpy, collective and overlap facts.

See docs/analysis.md#multi-kernel-data.

Three summaries of the GPU side of a trace:

* `memcpy_summary`: copies grouped by direction (D2H, H2D, D2D, other, read from the name);
* `nccl_summary`: collective kernels, with the ten longest;
* `overlap_analysis`: how much communication and copying the computation hid.

Like TraceLens, this uses **every** GPU event of the trace (kernel, gpu_memcpy, gpu_memset),
whether or not it is linked to a host launch. That differs from the GPU timeline of the perf
report, which counts only linked events, so the two `total_time_us` can differ (e.g. mi300
Qwen: 47,085.8 µs here against 33,131 µs of linked work there).

Buckets are the model's `bucket` column: communication therefore also includes the
symmetric-memory kernels of torch.distributed (`multimem_all_reduce`, ...), a documented
deviation from TraceLens, which matches only collective library names.

Values are rounded as TraceLens writes them: times, byte averages and percents to 2 decimals,
overlap ratios to 4. `MultiKernelData.model_dump(mode="json")` gives the file's exact shape:
keys that only exist sometimes (nccl averages and top ops, a top-level `error`) are left out
when absent, while the overlap ratios stay `null` when there is nothing to overlap.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import (
    BaseModel,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from ..trace.model import TraceModel
from ..trace.timeline import timeline
from .document_base import OmitNone

Direction = Literal["D2H", "H2D", "D2D", "other"]

# Copy directions by name, in the order they are tried and written.
DIRECTIONS: tuple[tuple[Direction, tuple[str, ...]], ...] = (
    ("D2H", ("dtoh", "device -> host", "devicetohost")),
    ("H2D", ("htod", "host -> device", "hosttodevice")),
    ("D2D", ("dtod", "device -> device", "devicetodevice")),
)
TOP_OPS = 10


class DirectionSummary(BaseModel):
    count: int
    total_time_us: float
    avg_time_us: float
    max_time_us: float
    total_bytes: int
    avg_bytes: float


class MemcpySummary(BaseModel):
    total_count: int
    total_time_us: float
    by_direction: dict[Direction, DirectionSummary]


class TopOp(BaseModel):
    name: str
    duration_us: float
    stream: int | str | None


class NcclSummary(OmitNone):
    total_count: int
    total_time_us: float
    avg_time_us: float | None = None
    max_time_us: float | None = None
    top_ops: list[TopOp] | None = None


class OverlapAnalysis(BaseModel):
    total_time_us: float
    computation_time_us: float
    total_comm_time_us: float
    exposed_comm_time_us: float
    total_memcpy_time_us: float
    exposed_memcpy_time_us: float
    comm_overlap_ratio: float | None
    memcpy_overlap_ratio: float | None
    comm_percent_of_total: float
    memcpy_percent_of_total: float


class MultiKernelData(BaseModel):
    memcpy_summary: MemcpySummary
    nccl_summary: NcclSummary
    overlap_analysis: OverlapAnalysis | None  # written as {} when there are no GPU events
    error: str | None = None

    @field_validator("overlap_analysis", mode="before")
    @classmethod
    def _empty_overlap(cls, value: Any) -> Any:
        return None if value == {} else value  # read back what the serializer writes

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("overlap_analysis") is None:
            data["overlap_analysis"] = {}
        if data.get("error") is None:
            data.pop("error", None)
        return data


def memcpy_direction(names: pd.Series) -> np.ndarray:
    """Direction of each copy from its lower-cased name, `other` when none matches."""
    lower = names.astype(str).str.lower()
    result = np.full(len(lower), "other", dtype=object)
    undecided = np.ones(len(lower), dtype=bool)
    for direction, needles in DIRECTIONS:
        hit = np.zeros(len(lower), dtype=bool)
        for needle in needles:
            hit |= lower.str.contains(needle, regex=False).to_numpy()
        result[hit & undecided] = direction
        undecided &= ~hit
    return result


def _memcpy_summary(mem: pd.DataFrame, nbytes: np.ndarray) -> MemcpySummary:
    frame = pd.DataFrame(
        {
            "direction": memcpy_direction(mem["name"]),
            "dur": np.nan_to_num(mem["dur"].to_numpy(dtype=np.float64)),
            "bytes": np.where(nbytes > 0, nbytes, 0),  # "truthy" sizes only; -1 is missing
        }
    )
    stats = frame.groupby("direction", sort=False).agg(
        count=("dur", "size"), total=("dur", "sum"), max=("dur", "max"), bytes=("bytes", "sum")
    )
    by_direction: dict[Direction, DirectionSummary] = {}
    for direction in ("D2H", "H2D", "D2D", "other"):
        if direction not in stats.index:
            continue
        row = stats.loc[direction]
        count, total, total_bytes = int(row["count"]), float(row["total"]), int(row["bytes"])
        by_direction[direction] = DirectionSummary(
            count=count,
            total_time_us=round(total, 2),
            avg_time_us=round(total / count, 2),
            max_time_us=round(float(row["max"]), 2),
            total_bytes=total_bytes,
            avg_bytes=round(total_bytes / count, 2) if total_bytes else 0.0,
        )
    return MemcpySummary(
        total_count=len(frame),
        total_time_us=round(float(frame["dur"].sum()), 2),
        by_direction=by_direction,
    )


def _nccl_summary(comm: pd.DataFrame) -> NcclSummary:
    dur = np.nan_to_num(comm["dur"].to_numpy(dtype=np.float64))
    total = float(dur.sum())
    if len(comm) == 0:
        return NcclSummary(total_count=0, total_time_us=0.0)
    # Longest first; ties keep trace order.
    order = np.lexsort((np.arange(len(dur)), -dur))[:TOP_OPS]
    names = comm["name"].astype(str).to_numpy()[order]
    streams = comm["stream"].to_numpy()[order]
    top = [
        TopOp(name=n, duration_us=round(float(d), 2), stream=_plain(s))
        for n, d, s in zip(names, dur[order], streams, strict=True)
    ]
    return NcclSummary(
        total_count=len(comm),
        total_time_us=round(total, 2),
        avg_time_us=round(total / len(comm), 2),
        max_time_us=round(float(dur.max()), 2),
        top_ops=top,
    )


def _plain(value: Any) -> int | str | None:
    """A stream id as JSON wants it (numpy ints to int, missing to None)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, np.integer | int):
        return int(value)
    if isinstance(value, np.floating | float):
        return int(value) if float(value).is_integer() else str(value)
    return str(value)


def _overlap(gpu: pd.DataFrame) -> OverlapAnalysis | None:
    if len(gpu) == 0:
        return None
    start = gpu["ts"].to_numpy(dtype=np.float64)
    end = start + np.nan_to_num(gpu["dur"].to_numpy(dtype=np.float64))
    t = timeline(start, end, gpu["bucket"].to_numpy())

    def ratio(exposed: float, total: float) -> float | None:
        return round(1.0 - exposed / total, 4) if total > 0 else None

    def percent(part: float) -> float:
        return round(part / t.total_time * 100.0, 2) if t.total_time > 0 else 0.0

    return OverlapAnalysis(
        total_time_us=round(t.total_time, 2),
        computation_time_us=round(t.computation_time, 2),
        total_comm_time_us=round(t.total_comm_time, 2),
        exposed_comm_time_us=round(t.exposed_comm_time, 2),
        total_memcpy_time_us=round(t.total_memcpy_time, 2),
        exposed_memcpy_time_us=round(t.exposed_memcpy_time, 2),
        comm_overlap_ratio=ratio(t.exposed_comm_time, t.total_comm_time),
        memcpy_overlap_ratio=ratio(t.exposed_memcpy_time, t.total_memcpy_time),
        comm_percent_of_total=percent(t.exposed_comm_time),
        memcpy_percent_of_total=percent(t.exposed_memcpy_time),
    )


def multi_kernel_from_frame(gpu: pd.DataFrame, nbytes: np.ndarray) -> MultiKernelData:
    """The summaries of a GPU-event frame (`cat`, `name`, `ts`, `dur`, `stream`, `bucket`).

    `nbytes` holds `args.bytes` per row (-1 when missing). Split from `multi_kernel_data` so a
    caller can reclassify events first (e.g. to compare with TraceLens's buckets).
    """
    bucket = gpu["bucket"].to_numpy()
    is_mem = bucket == "memcpy"
    return MultiKernelData(
        memcpy_summary=_memcpy_summary(gpu[is_mem], np.asarray(nbytes)[is_mem]),
        nccl_summary=_nccl_summary(gpu[bucket == "communication"]),
        overlap_analysis=_overlap(gpu),
    )


def multi_kernel_data(model: TraceModel) -> MultiKernelData:
    """`multi_kernel_data.json` of a trace, from all its GPU events (linked or not)."""
    gpu = model.gpu
    nbytes = model.events["bytes"].loc[gpu.index].to_numpy()
    return multi_kernel_from_frame(gpu, nbytes)
