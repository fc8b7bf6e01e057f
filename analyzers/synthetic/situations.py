"""Every generated situation of an idle or misread GPU, by name: its writer, plan and planted
answer (planted.py), for tests and demos to iterate over."""

from __future__ import annotations

from functools import partial

from . import busy as busy
from . import collectives as collectives
from . import copies as copies
from . import dispatch as dispatch
from . import formats as formats
from . import idle as idle
from . import phases as phases
from .planted import Situation

_ALL = (
    Situation(
        "allocator_churn",
        "hipFree/hipMalloc in every backward, frees 10x slower from the third iteration",
        partial(idle.write_allocator_churn_trace, vendor="amd"),
        idle.ALLOCATOR_CHURN,
        lambda seed: idle.allocator_churn_planted("amd"),
    ),
    Situation(
        "allocator_churn_cuda",
        "the same churn on an H100: cudaFree/cudaMalloc",
        partial(idle.write_allocator_churn_trace, vendor="nvidia"),
        idle.ALLOCATOR_CHURN,
        lambda seed: idle.allocator_churn_planted("nvidia"),
    ),
    Situation(
        "single_process_loader",
        "num_workers=0: a 48-62 ms DataLoader __next__ gap every step",
        idle.write_single_loader_trace,
        idle.SINGLE_LOADER,
        partial(idle.loader_planted, idle.SINGLE_LOADER),
    ),
    Situation(
        "loader_stalls",
        "multi-worker DataLoader stalling 0.5-0.8 s every third or fourth iteration",
        idle.write_loader_stall_trace,
        idle.LOADER_STALLS,
        partial(idle.loader_planted, idle.LOADER_STALLS),
    ),
    Situation(
        "optimizer_gap",
        "Optimizer.step#Shampoo.step holding the host 57-64 ms every step",
        dispatch.write_optimizer_gap_trace,
        dispatch.OPTIMIZER_GAP,
        partial(dispatch.optimizer_planted, dispatch.OPTIMIZER_GAP),
    ),
    Situation(
        "ddp_buffer_broadcast",
        "eager DDP broadcasting its buffers every forward: 88 ms of gaps a step",
        collectives.write_ddp_broadcast_trace,
        collectives.DDP_BROADCAST,
        lambda seed: collectives.ddp_planted(),
    ),
    Situation(
        "tiny_all_reduces",
        "80 tiny all-reduces a step from CompiledFunctionBackward, 0 % overlapped",
        collectives.write_tiny_all_reduces_trace,
        collectives.TINY_ALL_REDUCES,
        lambda seed: collectives.tiny_all_reduces_planted(),
    ),
    Situation(
        "launch_bound_mlp",
        "a small MLP whose 9 µs kernels are shorter than their 17 µs launch calls",
        dispatch.write_launch_bound_trace,
        dispatch.LAUNCH_BOUND_MLP,
        lambda seed: dispatch.launch_bound_planted(),
    ),
    Situation(
        "warmup_in_window",
        "a benchmark whose warm-up (10 s cudaFree in the first convolution) is 98.5 % of "
        "the window; steady iterations GPU-bound",
        phases.write_warmup_trace,
        phases.WARMUP,
        lambda seed: phases.warmup_planted(),
    ),
    Situation(
        "gpu_side_wait",
        "64 ms a step waiting on a side stream's event with hundreds of kernels queued, "
        "the host blocked in a 704-byte pageable .to(); a 101 ms closing synchronise",
        phases.write_gpu_wait_trace,
        phases.GPU_WAIT,
        lambda seed: phases.gpu_wait_planted(),
    ),
    Situation(
        "one_tiny_kernel",
        "one 1.76 µs Triton kernel and a stray 13.3 s ProfilerStep on another thread",
        phases.write_tiny_kernel_trace,
        phases.TINY_KERNEL,
        lambda seed: phases.tiny_kernel_planted(),
    ),
    Situation(
        "gpu_bound_fp32",
        "98.4 % busy, launch queue full at 1,024, every kernel fp32 on CUDA cores, no shapes",
        busy.write_fp32_bound_trace,
        busy.FP32_BOUND,
        lambda seed: busy.fp32_planted(),
    ),
    Situation(
        "compiled_dtod_copies",
        "93 ms of DtoD copies, 95 % of them clones inside the compiled regions",
        busy.write_compiled_copies_trace,
        busy.COMPILED_COPIES,
        lambda seed: busy.compiled_copies_planted(),
    ),
    Situation(
        "setup_weight_upload",
        "a benchmark profiling its model load: 168 ms of pageable weight uploads before the "
        "first step, 73.7 % of the GPU's busy time; the steps GPU-bound on bf16 GEMMs",
        copies.write_setup_upload_trace,
        copies.SETUP_UPLOAD,
        lambda seed: copies.setup_upload_planted(),
    ),
    Situation(
        "filtered_host_side",
        "the allocator churn filtered to one runtime event per GPU event, no device properties",
        formats.write_filtered_trace,
        formats.ALLOCATOR_CHURN,
        lambda seed: formats.filtered_planted(),
    ),
    Situation(
        "format_2021",
        "the launch-bound MLP in the 2021 format (Kernel/Runtime categories, string tids)",
        formats.write_2021_trace,
        formats.OLD_MLP,
        lambda seed: formats.old_format_planted(),
    ),
    Situation(
        "counters_only",
        "a CUPTI range-profiler trace: per-kernel FLOP counters, no timeline",
        formats.write_counters_trace,
        formats.COUNTERS,
        lambda seed: formats.counters_planted(),
    ),
)
SITUATIONS: dict[str, Situation] = {s.name: s for s in _ALL}
