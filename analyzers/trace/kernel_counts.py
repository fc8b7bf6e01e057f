"""How many kernels the GPU ran, how many were short, and in which timeline bucket: the
launch-overhead evidence the CPU/idle analysis reports (docs/analysis.md#cpu-idle)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import TraceModel

SHORT_KERNEL_US = 10.0  # a kernel shorter than this is dominated by its launch cost


@dataclass(frozen=True)
class KernelCounts:
    total: int = 0
    short: int = 0
    mean_us: float = 0.0
    by_bucket: dict[str, int] = field(default_factory=dict)


def kernel_counts(model: TraceModel, *, include_unlinked: bool = False) -> KernelCounts:
    """Counts over the GPU kernels the timeline counts; copies and memsets, ROCm's copy
    kernels included, are not kernels here."""
    gpu = model.gpu
    use = gpu if include_unlinked else gpu[gpu["linked"].to_numpy()]
    kernels = use[((use["cat"] == "kernel") & (use["bucket"] != "memcpy")).to_numpy()]
    if kernels.empty:
        return KernelCounts()
    dur = np.nan_to_num(kernels["dur"].to_numpy(dtype=np.float64))
    buckets = kernels["bucket"].astype(str).value_counts()
    return KernelCounts(
        total=len(kernels),
        short=int((dur < SHORT_KERNEL_US).sum()),
        mean_us=float(dur.mean()),
        by_bucket={str(k): int(v) for k, v in sorted(buckets.items())},
    )
