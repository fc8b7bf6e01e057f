"""GPU timeline: where the GPU's wall time went (compute, exposed comm and memcpy, idle).

Definitions: docs/trace.md#gpu-timeline. Each GPU event is classified once per unique name,
then the buckets are merged into interval sets and combined. The file-wide timeline pools
every device, as TraceLens does; `per_device` splits it, which is the right measure for a
file that holds several GPUs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .intervals import merge, subtract

Bucket = Literal["computation", "communication", "memcpy"]

# Collectives by name, plus the symmetric-memory kernels of torch.distributed
# (`multimem_all_reduce`, `one_shot_all_reduce`, ...;
# see docs/deviations.md#symmetric-memory-collectives-are-communication).
COMMUNICATION = re.compile(
    r"nccl|rccl|cross_device_reduce|multimem_|one_shot_all_reduce|two_shot_all_reduce"
    r"|symm_mem",
    re.IGNORECASE,
)
ROCM_COPY_KERNEL = re.compile(
    r"(MEMORY_COPY_(HOST_TO_DEVICE|DEVICE_TO_HOST|DEVICE_TO_DEVICE)"
    r"|__amd_rocclr_copyBuffer(Rect)?(Aligned)?)(\.kd)?"
)

ROWS = (
    "computation_time",
    "exposed_comm_time",
    "exposed_memcpy_time",
    "busy_time",
    "idle_time",
    "total_time",
    "total_comm_time",
    "total_memcpy_time",
)


def classify(cat: str, name: str) -> Bucket:
    """Bucket of one GPU event by its category and name (collective names plus symmetric memory)."""
    if cat == "gpu_memcpy":
        return "memcpy"
    if cat == "kernel" and ROCM_COPY_KERNEL.fullmatch(name):
        return "memcpy"
    if COMMUNICATION.search(name):
        return "communication"
    return "computation"


def classify_events(gpu: pd.DataFrame) -> np.ndarray:
    """Bucket per row of a GPU-event frame (columns `cat`, `name`), computed per unique pair."""
    pairs = gpu[["cat", "name"]].astype(str)
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(pairs))
    buckets = np.array([classify(c, n) for c, n in uniques], dtype=object)
    return buckets[codes] if len(codes) else np.empty(0, dtype=object)


@dataclass(frozen=True, slots=True)
class Timeline:
    """The eight timeline rows, in microseconds."""

    computation_time: float
    exposed_comm_time: float
    exposed_memcpy_time: float
    busy_time: float
    idle_time: float
    total_time: float
    total_comm_time: float
    total_memcpy_time: float

    def rows(self) -> list[dict[str, float | str]]:
        """Rows as TraceLens writes them: type, time in ms, percent of total time."""
        total = self.total_time
        return [
            {
                "type": row,
                "time ms": getattr(self, row) / 1000.0,
                "percent": _share(getattr(self, row), total),
            }
            for row in ROWS
        ]


def _share(part: float, total: float) -> float:
    """Percent of `total`, within [0, 100]: float rounding of sums of interval lengths can
    land a few ulps outside, and a share outside that range means nothing to a reader."""
    return min(max(part / total * 100.0, 0.0), 100.0) if total > 0 else 0.0


def timeline(start: np.ndarray, end: np.ndarray, bucket: np.ndarray) -> Timeline:
    """Timeline of a set of GPU events given their intervals and buckets."""
    comp = merge(start[bucket == "computation"], end[bucket == "computation"])
    comm = merge(start[bucket == "communication"], end[bucket == "communication"])
    mem = merge(start[bucket == "memcpy"], end[bucket == "memcpy"])
    busy = merge(start, end)
    total = busy.span()
    exposed_comm = subtract(comm, comp)
    exposed_mem = subtract(subtract(mem, comp), comm)
    busy_time = busy.length()
    return Timeline(
        computation_time=comp.length(),
        exposed_comm_time=exposed_comm.length(),
        exposed_memcpy_time=exposed_mem.length(),
        busy_time=busy_time,
        idle_time=max(total - busy_time, 0.0),  # rounding only: busy is within the span
        total_time=total,
        total_comm_time=comm.length(),
        total_memcpy_time=mem.length(),
    )


@dataclass(frozen=True, slots=True)
class GpuTimeline:
    """The pooled timeline, one per device, and what was left out of it."""

    pooled: Timeline
    per_device: dict[int, Timeline]
    events_used: int
    unlinked_excluded: int


def gpu_timeline(gpu: pd.DataFrame, *, include_unlinked: bool = False) -> GpuTimeline:
    """Timeline of GPU events (`ts`, `dur`, `cat`, `name`, `device`, `linked` columns).

    Only events linked to a host launch count, as in TraceLens, unless `include_unlinked`;
    the number excluded is reported so that nothing disappears silently.
    """
    use = gpu if include_unlinked else gpu[gpu["linked"].to_numpy()]
    start = use["ts"].to_numpy(dtype=np.float64)
    end = start + np.nan_to_num(use["dur"].to_numpy(dtype=np.float64))
    bucket = use["bucket"].to_numpy() if "bucket" in use else classify_events(use)
    device = use["device"].to_numpy()
    per_device = {
        int(d): timeline(start[device == d], end[device == d], bucket[device == d])
        for d in np.unique(device)
    }
    return GpuTimeline(
        pooled=timeline(start, end, bucket),
        per_device=per_device,
        events_used=len(use),
        unlinked_excluded=len(gpu) - len(use),
    )
