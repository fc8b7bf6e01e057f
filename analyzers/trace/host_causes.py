"""What each named idle cause looks like in the host's events: the calls, operators,
annotations and Python frames that, while in flight, explain why the GPU had nothing to run.

Pure name rules over the events table, one boolean column per cause; the attribution
(idle_attribution.py) decides which thread and which instant each rule is asked about.
Definitions and the order of precedence: docs/analysis.md#idle-causes.
"""

from __future__ import annotations

import re
from typing import Literal, get_args

import numpy as np

from .columns import name_matches
from .model import TraceModel
from .schema import LAUNCH_CATEGORIES

IdleCause = Literal[
    "profiler",
    "gpu_wait",
    "one_off",
    "allocator",
    "sync",
    "input_pipeline",
    "collective_issue",
    "optimizer_step",
    "launch_bound",
    "dispatch",
    "unexplained",
]
# precedence: an idle instant goes to the first cause that explains it (the order above)
CAUSES: tuple[IdleCause, ...] = get_args(IdleCause)
LABELS: dict[IdleCause, str] = {
    "profiler": "profiler start/stop",
    "gpu_wait": "GPU waiting on its own work (next kernel already queued)",
    "one_off": "one-off set-up (module load, handle or stream creation, first launches)",
    "allocator": "memory allocator (malloc/free calls)",
    "sync": "host blocked in a synchronising call",
    "input_pipeline": "input pipeline (DataLoader)",
    "collective_issue": "issuing collectives on the host",
    "optimizer_step": "optimizer step on the host",
    "launch_bound": "launch-bound (kernels shorter than their launches)",
    "dispatch": "host operator and Python dispatch",
    "unexplained": "unexplained (no host event recorded)",
}

ALLOCATOR_CALLS = re.compile(
    r"(cuda|hip)(Malloc|Free)(Async|Host|Managed|Pitch|3D|Array)?(FromPoolAsync)?"
    r"|hipExtMallocWithFlags|hipHostMalloc|hipHostFree|cuMem(Alloc|Free)\w*"
    r"|cudaMemPool\w*|hipMemPool\w*"
)
ONE_OFF_CALLS = re.compile(
    r"(cu|hip)ModuleLoad\w*|cuModuleGetFunction|hipModuleGetFunction|cuLibraryLoad\w*"
    r"|(cuda|hip)StreamCreate\w*|cuStreamCreate\w*|(cuda|hip)DeviceReset|cuCtxCreate\w*"
    r"|cu(Device)?PrimaryCtxRetain|(cublas|cublasLt|cudnn|hipblas|hipblasLt|rocblas|miopen)"
    r"(_create_handle|Create(Handle)?)\w*|(cuda|hip)GetDeviceProperties\w*"
    r"|(cuda|hip)HostRegister|(cuda|hip)DeviceEnablePeerAccess|(cuda|hip)SetDevice"
    r"|(cuda|hip)FuncGetAttributes|cuFuncGetAttribute|(cuda|hip)GetDeviceCount"
)
LAUNCH_CALLS = re.compile(
    r"(cuda|hip)LaunchKernel\w*|cuLaunchKernel\w*|hipExtLaunchKernel\w*|"
    r"hipModuleLaunchKernel|hipExtModuleLaunchKernel|(cuda|hip)LaunchCooperativeKernel\w*|"
    r"(cuda|hip)GraphLaunch|cudaLaunchKernelExC\w*"
)
# a launch call this much slower than the trace's median launch, and this long, is a first
# launch paying for lazy module loading or JIT, not per-step cost
FIRST_LAUNCH_FACTOR = 20.0
FIRST_LAUNCH_MIN_US = 500.0
INPUT_PIPELINE = re.compile(
    r"enumerate\(DataLoader\)#.*__next__|.*torch/utils/data/dataloader\.py\(\d+\): __next__"
    r"|.*DataLoader.*\.__next__"
)
COLLECTIVE_ISSUE = re.compile(
    r"record_param_comms|nccl:\w+|c10d::\w+|gloo:\w+|rccl:\w+|aten::(un)?flatten_dense_tensors"
    r"|.*torch/nn/parallel/distributed\.py\(\d+\): (_sync_buffers|_sync_params|_broadcast\w*|"
    r"_sync_module_buffers|_default_broadcast_coalesced|_pre_forward|_post_forward)"
    r"|.*torch/distributed/[\w/]*\.py\(\d+\): \w*(all_reduce|broadcast|all_gather|reduce_scatter"
    r"|all_to_all|barrier|send|recv)\w*"
)
OPTIMIZER_STEP = re.compile(
    r"Optimizer\.(step|zero_grad)#.*|.*torch/optim/[\w/]*\.py\(\d+\): (step|zero_grad|_\w+)"
)
PROFILER_NAMES = re.compile(
    r"\[profiler\].*|profiler::\w+.*|.*torch/profiler/\w+\.py\(\d+\).*"
    r"|.*torch/autograd/profiler\w*\.py\(\d+\).*"
)
HOST_CATEGORIES = ("cpu_op", "user_annotation", "python_function", *sorted(LAUNCH_CATEGORIES))
STEP_LIKE = re.compile(r"ProfilerStep#\d+")


def _named(model: TraceModel, pattern: re.Pattern[str], cats: tuple[str, ...]) -> np.ndarray:
    ev = model.events
    in_cat = ev["cat"].isin(cats).to_numpy()
    return in_cat & name_matches(ev["name"], lambda n: pattern.fullmatch(n) is not None)


def first_launches(model: TraceModel) -> np.ndarray:
    """Launch calls far slower than the trace's median launch (lazy load, JIT, first use)."""
    is_launch = _named(model, LAUNCH_CALLS, tuple(sorted(LAUNCH_CATEGORIES)))
    dur = np.nan_to_num(model.events["dur"].to_numpy(dtype=np.float64))
    if not is_launch.any():
        return is_launch
    median = float(np.median(dur[is_launch]))
    slow = dur >= max(FIRST_LAUNCH_MIN_US, FIRST_LAUNCH_FACTOR * median)
    return is_launch & slow


def cause_masks(model: TraceModel) -> dict[IdleCause, np.ndarray]:
    """Per cause with a host-side signature, which events carry it (one bool per uid).

    `sync` is decided by the host-blocking analysis (host_blocking.py) and `launch_bound`
    by the launch-bound stretches; `dispatch` is any host event in flight but a
    ProfilerStep annotation, which spans whole steps and says nothing about the cause.
    """
    runtime = tuple(sorted(LAUNCH_CATEGORIES))
    spans = ("cpu_op", "user_annotation", "python_function")
    ev = model.events
    # rows a capture merge grafted (capture-time clock) or pseudo ops were never in flight
    recorded = np.arange(len(ev)) < len(model.recorded)
    host = ev["cat"].isin(HOST_CATEGORIES).to_numpy() & recorded
    step = name_matches(ev["name"], lambda n: STEP_LIKE.fullmatch(n) is not None)
    masks: dict[IdleCause, np.ndarray] = {
        "profiler": _named(model, PROFILER_NAMES, HOST_CATEGORIES),
        "one_off": _named(model, ONE_OFF_CALLS, runtime) | first_launches(model),
        "allocator": _named(model, ALLOCATOR_CALLS, runtime),
        "input_pipeline": _named(model, INPUT_PIPELINE, spans),
        "collective_issue": _named(model, COLLECTIVE_ISSUE, (*spans, *runtime)),
        "optimizer_step": _named(model, OPTIMIZER_STEP, spans),
        "dispatch": host & ~step,
    }
    return {cause: mask & recorded for cause, mask in masks.items()}
