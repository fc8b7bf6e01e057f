"""A Kineto trace of an inference loop bound by host<->device copies from pageable memory, with
known answers (docs/analysis.md#copies).

`write_copy_bound_trace` (COPY_BOUND): every step copies its input batch from pageable host
memory to the device at a fifth of a PCIe 5.0 x16 link, runs a few GEMMs on it and copies the
result back to pageable memory. Pageable copies are synchronous for the host, so the GPU is
almost never idle: it is busy copying, with no kernel beside the copies. Timing is exact;
every figure is worked out from the plan constants below.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rooflens.analyzers.trace.synthetic_host import (
    BASE_US,
    GEMM,
    LAUNCH_LATENCY_US,
    OP_LAUNCH_AT_US,
    _write,
    _Writer,
)

H2D = "Memcpy HtoD (Pageable -> Device)"
D2H = "Memcpy DtoH (Device -> Pageable)"
RETURN_US = 5.0  # a blocking copy call returns 5 µs after its copy lands


@dataclass(frozen=True)
class CopyBoundPlan:
    """Step k starts at k * period. At its start `aten::to` (> `aten::copy_`) copies
    `batch_bytes` host-to-device in `h2d_us`; the call blocks until the copy lands. The host
    then launches `kernels` aten::mm, `op_us` apart, each `kernel_us` on the GPU (queued back to
    back), and an `aten::copy_` of `result_bytes` device-to-host in `d2h_us`, queued behind
    the GEMMs; that call blocks too. Per step the GPU copies for h2d + d2h, computes for
    kernels x kernel_us, and idles for what is left of the period."""

    steps: int = 4
    period_us: float = 12_600.0
    batch_bytes: int = 128_000_000
    h2d_us: float = 10_000.0
    kernels: int = 10
    op_us: float = 25.0
    kernel_us: float = 200.0
    result_bytes: int = 4_000_000
    d2h_us: float = 500.0

    @property
    def copy_starts_us(self) -> float:
        """When a step's input copy starts on the GPU, after the step starts."""
        return OP_LAUNCH_AT_US + LAUNCH_LATENCY_US

    @property
    def window_us(self) -> float:
        """First GPU event's start to the last one's end."""
        last_end = self.copy_starts_us + self.h2d_us + 30.0 + self.kernels * self.kernel_us
        return (self.steps - 1) * self.period_us + last_end + self.d2h_us - self.copy_starts_us


COPY_BOUND = CopyBoundPlan()


def _copy(w: _Writer, kernel: str, ts: float, dur: float, nbytes: int, ends_at: float) -> float:
    """`aten::copy_` at `ts` launching one blocking copy that lands at `ends_at`; returns when
    the operator returns."""
    call = ts + OP_LAUNCH_AT_US
    call_us = ends_at + RETURN_US - call
    w.op("aten::copy_", ts, call_us + OP_LAUNCH_AT_US + 2.0)
    extra = {"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / dur / 1e3}
    w.launch(kernel, call, dur, "cudaMemcpyAsync", call_us=call_us, extra=extra)
    return ts + call_us + OP_LAUNCH_AT_US + 2.0


def _step(w: _Writer, p: CopyBoundPlan, t: float) -> None:
    w.frame("serve.py(31): infer_step", t - 3.0, t + p.period_us - 3.0)
    landed = t + p.copy_starts_us + p.h2d_us
    w.op("aten::to", t - 2.0, 0.0)
    to_op = w.events[-1]
    host = _copy(w, H2D, t, p.h2d_us, p.batch_bytes, landed)
    to_op["dur"] = round(host + 2.0 - (t - 2.0), 3)
    host = landed + 12.0  # the first GEMM starts 30 µs after the copy lands
    for i in range(p.kernels):
        w.launching_op("aten::mm", GEMM, host + i * p.op_us, p.op_us, p.kernel_us)
    result_at = host + p.kernels * p.op_us
    gemms_end = landed + 30.0 + p.kernels * p.kernel_us
    _copy(w, D2H, result_at, p.d2h_us, p.result_bytes, gemms_end + p.d2h_us)


def write_copy_bound_trace(path: Path, *, profiler_steps: bool = True) -> Path:
    """Inference bound by pageable host<->device copies (COPY_BOUND)."""
    p, w = COPY_BOUND, _Writer()
    for k in range(p.steps):
        t = BASE_US + k * p.period_us
        w.step(k, t, t + p.period_us, profiler_steps)
        _step(w, p, t)
    return _write(path, w)
