"""A Kineto trace of an inference loop bound by host<->device copies from pageable memory, with
known answers (docs/analysis.md#copies).

`write_copy_bound_trace` (COPY_BOUND): every step copies its input batch from pageable host
memory to the device at a fifth of a PCIe 5.0 x16 link, runs a few GEMMs on it and copies the
result back to pageable memory. Pageable copies are synchronous for the host, so the GPU is
almost never idle: it is busy copying, with no kernel beside the copies.

`write_setup_upload_trace` (SETUP_UPLOAD): a benchmark that profiles its model load: before the
first `ProfilerStep#` the weights go to the device from pageable memory (85 % of the GPU's
time), then every step runs bf16 GEMMs back to back. The upload is set-up, a one-time cost;
the steady state is GPU-bound on the GEMMs.

Timing is exact; every figure is worked out from the plan constants below.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .devices import H100
from .host import (
    BASE_US,
    GEMM,
    LAUNCH_LATENCY_US,
    OP_LAUNCH_AT_US,
    _write,
    _Writer,
)
from .idle import START_US
from .kernels import H2D_PAGEABLE, NV_GEMM, seeded, to_host
from .planted import Planted, ms
from .writer import Writer

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


@dataclass(frozen=True)
class SetupUploadPlan:
    """Set-up from t_0: `tensors` weights of `tensor_bytes` each go to the device by
    `.to("cuda")` from pageable memory (`aten::to > aten::_to_copy > aten::copy_`, a blocking
    `upload_us` copy each), `gap_us` apart, under `bench.py(22): load_model`. The first
    ProfilerStep starts `gap_us` after the last upload returns.

    Steps: `gemms` `aten::mm` (`m` x `k` by `k` x `n`, bf16) 25 µs apart, each `gemm_us` on
    the GPU and queued back to back from 18 µs in, then `torch.cuda.synchronize()` returning
    5 µs after the GPU drains, and 2 µs later the next step. Each step idles 18 µs at its
    start (dispatch) and 5 (sync) + 2 (dispatch) µs at its end, but the last, whose end is
    past the GPU window. Uploads: 48 x 3.5 = 168 ms; GEMMs 5 x 30 x 0.4 = 60 ms: the upload
    is 73.7 % of the GPU's busy time, all of it in set-up."""

    tensors: int = 48
    tensor_bytes: int = 41_943_040
    upload_us: float = 3_500.0
    gap_us: float = 20.0
    steps: int = 5
    gemms: int = 30
    gemm_us: float = 400.0
    m: int = 4096
    k: int = 4096
    n: int = 4096
    first_step: int = 1

    @property
    def upload_ms(self) -> float:
        return self.tensors * self.upload_us / 1e3

    @property
    def gemm_ms(self) -> float:
        return self.steps * self.gemms * self.gemm_us / 1e3

    @property
    def step_us(self) -> float:
        return START_US + self.gemms * self.gemm_us + 7.0

    def idle_us(self, k: int) -> dict[str, float]:
        last = k == self.steps - 1
        return {"dispatch": START_US + (0.0 if last else 2.0), "sync": 0.0 if last else 5.0}


SETUP_UPLOAD = SetupUploadPlan()


def write_setup_upload_trace(
    path: Path, *, seed: int = 0, plan: SetupUploadPlan = SETUP_UPLOAD
) -> Path:
    """A benchmark whose window opens with its model's upload (SETUP_UPLOAD), on H100."""
    _, pid, t = seeded(seed)
    w, p, first = Writer(device=H100, host_pid=pid, main_tid=pid), plan, t
    loaded = t
    for _ in range(p.tensors):
        loaded = to_host(w, loaded, p.tensor_bytes, p.upload_us, kind=H2D_PAGEABLE) + p.gap_us
    w.frame("bench.py(22): load_model", t - 1.0, loaded - p.gap_us + 1.0)
    t = loaded
    shapes = {
        "Input Dims": [[p.m, p.k], [p.k, p.n]],
        "Input type": ["c10::BFloat16", "c10::BFloat16"],
        "Input Strides": [[p.k, 1], [p.n, 1]],
        "Concrete Inputs": ["", ""],
    }
    for k in range(p.steps):
        for i in range(p.gemms):
            w.launching_op("aten::mm", NV_GEMM, t + 25.0 * i, p.gemm_us, op_args=shapes)
        end = w.sync(t + 25.0 * p.gemms) + 2.0
        w.step(p.first_step + k, t, end)
        w.frame("bench.py(41): run_iteration", t, end)
        t = end
    w.frame("bench.py(88): main", first - 2.0, t + 2.0)
    return w.write(path, "setup_weight_upload")


def setup_upload_planted(plan: SetupUploadPlan = SETUP_UPLOAD) -> Planted:
    steady = range(plan.steps)
    idle = {c: sum(plan.idle_us(k)[c] for k in steady) / 1e3 for c in ("dispatch", "sync")}
    return Planted(
        p1="compute",
        cause=None,
        call_site="aten::mm",
        action=None,
        idle_by_cause_ms=ms(idle),
        steady_iterations=tuple(steady),
        step_ms=tuple(round(plan.step_us / 1e3, 6) for _ in steady),
        notes="168 ms of pageable host-to-device copies (73.7 % of the GPU's busy time) are "
        "the model's weights uploaded by aten::to before the first step: set-up, a one-time "
        "cost, no saving per step. The steps are GPU-bound on bf16 GEMMs: compute first.",
    )
