"""Traces as other tools and older profilers write them.

* `write_filtered_trace`: the allocator-churn loop (H100) as a sampling/filtering exporter
  leaves it: one runtime event per GPU event (the launches), no cudaFree/cudaMalloc, no
  event record/stream wait, no synchronise, no `deviceProperties`;
* `write_2021_trace`: the launch-bound MLP in the format PyTorch wrote in 2021: categories
  `Operator`/`Kernel`/`Runtime`/`Memcpy`, string thread ids (`"1234"`, `"stream 7"`), no flow
  events (launches link by correlation), no Python frames, `external id` on GPU events;
* `write_counters_trace`: a CUPTI range-profiler run: per-kernel `cuda_profiler_range`
  records with SASS FLOP instruction counters and replay timing, the host's operators and
  launches, benchmark annotations, and no kernel timeline at all.

Each is byte-for-byte the same for a seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cases import _old_format
from .devices import A100, V100
from .dispatch import (
    SMALL_GEMM,
    LaunchBoundPlan,
    launch_bound_planted,
    launch_bound_writer,
)
from .idle import (
    ALLOCATOR_CHURN,
    AllocatorChurnPlan,
    allocator_churn_planted,
    allocator_churn_writer,
)
from .kernels import seeded
from .planted import ACTIONS, Planted, ms
from .sample import write_document
from .writer import GPU_CATS, Writer

RUNTIME = ("cuda_runtime", "cuda_driver")


def write_filtered_trace(
    path: Path, *, seed: int = 0, plan: AllocatorChurnPlan = ALLOCATOR_CHURN
) -> Path:
    """The allocator-churn trace (H100) filtered to the runtime events that launched a GPU
    event, without `deviceProperties`."""
    document = allocator_churn_writer(seed, "nvidia", plan).document("filtered_allocator_churn")
    events = document["traceEvents"]
    launched = {e["args"]["correlation"] for e in events if e.get("cat") in GPU_CATS}
    document["traceEvents"] = [
        e for e in events if e.get("cat") not in RUNTIME or e["args"].get("correlation") in launched
    ]
    del document["deviceProperties"]
    return write_document(Path(path), document)


def filtered_planted(plan: AllocatorChurnPlan = ALLOCATOR_CHURN) -> Planted:
    """The churn's gaps are still there, but nothing recorded says why: the operators in
    flight are the backward's (dispatch), and the host side must be reported as partial."""
    whole = allocator_churn_planted("nvidia", plan)
    return Planted(
        p1="idle",
        cause="dispatch",
        call_site="aten::convolution_backward",
        caller="autograd::engine::evaluate_function: ConvolutionBackward0",
        action=ACTIONS["dispatch"],
        idle_by_cause_ms=ms({"dispatch": whole.idle_ms}),
        steady_iterations=whole.steady_iterations,
        step_ms=whole.step_ms,
        partial_host=True,
        notes="Filtered to one runtime event per GPU event: the cudaFree/cudaMalloc inside "
        "ConvolutionBackward0 are gone, so the idle can only be placed in that operator; "
        "every host-side finding is partial (no event record/stream wait, no synchronise, "
        "no device properties).",
    )


OLD_CATEGORIES = {
    "user_annotation": "Operator",
    "cuda_driver": "Runtime",
    "gpu_memset": "Memset",
}
OLD_GEMM = "volta_sgemm_32x32_sliced1x4_tn"
OLD_MLP = LaunchBoundPlan(steps=2)


def old_format(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """2021 spellings (synthetic_cases._old_format, plus annotations as `Operator`), string
    thread ids, `external id` on GPU and runtime events, no Python frames."""
    meta = [dict(e, tid=_old_tid(e)) for e in events if e.get("ph") == "M"]
    timed = [e for e in events if e.get("ph") != "M" and e.get("cat") != "python_function"]
    out = []
    for event in _old_format(timed):
        event = dict(event, cat=OLD_CATEGORIES.get(event["cat"], event["cat"]))
        event["tid"] = _old_tid(event)
        args = dict(event.get("args", {}))
        if event["cat"] in ("Kernel", "Memcpy", "Memset", "Runtime") and "External id" in args:
            args["external id"] = args.pop("External id")
        if event.get("name") == SMALL_GEMM:
            event["name"] = OLD_GEMM
        if "args" in event:
            event["args"] = args
        out.append(event)
    return meta + out


def _old_tid(event: dict[str, Any]) -> str:
    """GPU rows were named by their stream, host threads by their id, both as strings."""
    gpu = event.get("cat") in ("Kernel", "Memcpy", "Memset") or (
        event.get("ph") == "M" and event.get("pid") == 0 and event.get("tid")
    )
    return f"stream {event['tid']}" if gpu else str(event["tid"])


def write_2021_trace(path: Path, *, seed: int = 0, plan: LaunchBoundPlan = OLD_MLP) -> Path:
    """The launch-bound MLP (two iterations) in the 2021 format, on a V100."""
    w = launch_bound_writer(seed, plan)
    document = {
        "schemaVersion": 1,
        "deviceProperties": [V100],
        "traceEvents": old_format(w.metadata(w.events[0]["ts"]) + w.events),
    }
    return write_document(Path(path), document)


def old_format_planted(plan: LaunchBoundPlan = OLD_MLP) -> Planted:
    return launch_bound_planted(plan)


SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
OPS = ("dadd", "dfma", "dmul", "hadd", "hfma", "hmul", "fadd", "ffma", "fmul")
# Kernels of one AlexNet forward: (operator, kernel, {op: instructions}).
ALEXNET: tuple[tuple[str, str, dict[str, int]], ...] = (
    (
        "aten::cudnn_convolution",
        "sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw",
        {"ffma": 4_559_667_200, "fmul": 12_390_400},
    ),
    (
        "aten::add_",
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<"
        "at::native::CUDAFunctor_add<float> >",
        {"fadd": 12_390_400},
    ),
    (
        "aten::relu_",
        "void at::native::vectorized_elementwise_kernel<4, at::native::"
        "(anonymous namespace)::launch_clamp_scalar<float>",
        {},
    ),
    (
        "aten::max_pool2d_with_indices",
        "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>",
        {},
    ),
    (
        "aten::cudnn_convolution",
        "void fft2d_r2c_32x32<float, false, 0u, false>",
        {"ffma": 1_205_862_400, "fadd": 301_465_600, "fmul": 150_732_800},
    ),
    (
        "aten::mm",
        "ampere_sgemm_32x32_sliced1x4_tn",
        {"ffma": 554_303_488, "fadd": 2_359_296, "fmul": 3_145_728},
    ),
    (
        "aten::addmm",
        "void epilogue::impl::globalKernel<float, float, float, true, true>",
        {"fadd": 131_072},
    ),
    (
        "aten::native_dropout",
        "void at::native::(anonymous namespace)::fused_dropout_kernel_vec"
        "<float, float, unsigned int, 1, 4, bool>",
        {"fmul": 4_194_304},
    ),
    ("aten::addmm", "ampere_h1688gemm_128x128_ldg8_stages_32x1_tn", {"hfma": 268_435_456}),
)


@dataclass(frozen=True)
class CountersPlan:
    """A CUPTI range-profiler benchmark of an AlexNet forward on an A100: a warm-up forward
    and a measured forward (`[param|...|warmup|forward]`, `[param|...|measure|forward]`), each
    operator launching one kernel. The range profiler replays every kernel, so each launch
    call lasts `replay_us`, and records one `cuda_profiler_range` event per kernel (pid 0,
    tid 0, back to back, all `range_us` long: replay time, not a timeline) holding the nine
    SASS FLOP instruction counters. No kernel, copy or set event exists. FLOPs of a range:
    FMA instructions count two, the others one."""

    forwards: int = 2
    range_us: float = 121_431.0
    replay_us: float = 121_000.0
    op_us: float = 121_500.0

    @property
    def ranges(self) -> int:
        return self.forwards * len(ALEXNET)

    @property
    def flops(self) -> dict[str, int]:
        """FLOPs over every range, by precision (fp64 d*, fp16 h*, fp32 f*)."""
        out = {"fp64": 0, "fp16": 0, "fp32": 0}
        for _, _, counts in ALEXNET:
            for op, n in counts.items():
                precision = {"d": "fp64", "h": "fp16", "f": "fp32"}[op[0]]
                out[precision] += self.forwards * n * (2 if op.endswith("fma") else 1)
        return out


COUNTERS = CountersPlan()
BENCH = "[param|pytorch.model.alex_net|0|0|0"


def write_counters_trace(path: Path, *, seed: int = 0, plan: CountersPlan = COUNTERS) -> Path:
    """A counters-only CUPTI range-profiler trace (COUNTERS), on an A100."""
    _, pid, t = seeded(seed)
    w, first, n = Writer(device=A100, host_pid=pid, main_tid=pid), t, 0
    window = plan.ranges * plan.op_us + 2_000.0
    w.annotation(BENCH + "]", t - 1_000.0, t - 1_000.0 + window)
    for f in range(plan.forwards):
        phase = "warmup" if f == 0 else "measure"
        w.annotation(f"{BENCH}|{phase}|forward]", t, t + len(ALEXNET) * plan.op_us)
        for name, kernel, counts in ALEXNET:
            w.op(name, t + 2.0, t + plan.op_us - 8.0)
            w.runtime("cudaLaunchKernel", t + 10.0, plan.replay_us)
            counters = {SASS.format(op): counts.get(op, 0) for op in OPS}
            at = first + n * plan.range_us  # back to back: replay time, not a timeline
            w.x("cuda_profiler_range", kernel, at, plan.range_us, 0, 0, **counters)
            t, n = t + plan.op_us, n + 1
    spans = {
        "ph": "X",
        "cat": "Trace",
        "ts": round(first, 3),
        "dur": round(window, 3),
        "pid": "Spans",
        "tid": "__cupti_profiler__",
        "name": "__cupti_profiler__ (-1)",
        "args": {"Op count": 0},
    }
    document = {
        "schemaVersion": 1,
        "deviceProperties": [A100],
        "distributedInfo": {"rank": 0},
        "traceEvents": w.metadata(first) + w.events + [spans],
        "traceName": "benchmark_result_cupti_range_profiler.json",
    }
    return write_document(Path(path), document)


def counters_planted(plan: CountersPlan = COUNTERS) -> Planted:
    flops = plan.flops
    total = sum(flops.values())
    return Planted(
        p1="nothing",
        cause=None,
        call_site="cuda_profiler_range",
        action=None,
        idle_by_cause_ms=ms({}),
        steady_iterations=(),
        notes=f"Per-kernel hardware counters, no timeline: {plan.ranges} kernels, "
        f"{total / 1e9:.3f} GFLOP from SASS instruction counts ({100 * flops['fp32'] / total:.1f} "
        "% fp32, the rest fp16); durations are replay time. Describe it; never 'no GPU events'.",
    )
