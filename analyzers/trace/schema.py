"""What the loader keeps of a Kineto trace: the event fields, the `args` table, the metadata.

The arg table is the one place that says which `args` survive decoding and as what column
type. Anything not listed is skipped by the decoder without being turned into Python objects,
and the free-form top-level `metadata` object (it can hold environment variables and access
tokens) is never decoded at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import msgspec

ArgKind = Literal["int", "float", "str", "json"]


# Which events carry which args. Args are decoded per family with a struct of that family's
# fields only, so a python_function event (often most of a trace) costs two fields, not 30.
Family = Literal["op", "gpu", "runtime", "python", "meta", "sync"]
FAMILY_OF_CATEGORY: dict[str, Family] = {
    "cpu_op": "op",
    "user_annotation": "op",
    "gpu_user_annotation": "op",
    "kernel": "gpu",
    "gpu_memcpy": "gpu",
    "gpu_memset": "gpu",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "python_function": "python",
    # CUPTI synchronisation records (PyTorch's enable_cuda_sync_events): which stream waited
    # for which recorded event
    "cuda_sync": "sync",
}
FAMILIES: tuple[Family, ...] = ("op", "gpu", "runtime", "python", "meta", "sync")


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One kept `args` entry: column name, spelling in the trace, type, families carrying it."""

    column: str
    key: str
    kind: ArgKind
    families: frozenset[Family]


def _spec(column: str, key: str, kind: ArgKind, families: str) -> ArgSpec:
    return ArgSpec(column, key, kind, frozenset(families.split()))  # type: ignore[arg-type]


# int: int64 column, -1 when absent or not an integer that fits.  float: float64, NaN when
# absent.  str: categorical text.  json: the value's JSON text, categorical (shapes, grids, ...)
# so equal signatures share one string and later stages decode each unique value once.
ARG_SPECS: tuple[ArgSpec, ...] = (
    _spec("correlation", "correlation", "int", "gpu runtime sync"),
    _spec("external_id", "External id", "int", "op gpu runtime"),
    _spec("seq", "Sequence number", "int", "op"),
    _spec("fwd_thread", "Fwd thread id", "int", "op"),
    _spec("stream", "stream", "int", "gpu op sync"),
    _spec("device", "device", "int", "gpu sync"),
    _spec("bytes", "bytes", "int", "gpu"),
    _spec("python_id", "Python id", "int", "python"),
    _spec("python_parent_id", "Python parent id", "int", "python"),
    _spec("cbid", "cbid", "int", "runtime"),
    _spec("bandwidth_gbs", "memory bandwidth (GB/s)", "float", "gpu"),
    _spec("input_dims", "Input Dims", "json", "op"),
    _spec("input_type", "Input type", "json", "op"),
    _spec("input_strides", "Input Strides", "json", "op"),
    _spec("concrete_inputs", "Concrete Inputs", "json", "op"),
    _spec("grid", "grid", "json", "gpu runtime"),
    _spec("block", "block", "json", "gpu runtime"),
    _spec("launch_kernel", "kernel", "str", "runtime"),
    # collective metadata (NCCL/RCCL kernels and c10d record_param_comms ops)
    _spec("collective_name", "Collective name", "str", "gpu op"),
    _spec("pg_name", "Process Group Name", "str", "gpu op"),
    _spec("pg_desc", "Process Group Description", "str", "gpu op"),
    _spec("pg_ranks", "Process Group Ranks", "json", "gpu op"),
    _spec("group_size", "Group size", "int", "gpu op"),
    _spec("coll_dtype", "dtype", "str", "gpu op"),
    _spec("in_msg_nelems", "In msg nelems", "int", "gpu op"),
    _spec("out_msg_nelems", "Out msg nelems", "int", "gpu op"),
    _spec("in_split_size", "In split size", "json", "gpu op"),
    _spec("out_split_size", "Out split size", "json", "gpu op"),
    _spec("coll_seq", "Seq", "int", "gpu op"),  # c10d sequence number within the group
    # a stream wait's source: the stream the awaited event was recorded on, and the
    # correlation id of its cudaEventRecord (-1 where the profiler did not resolve it)
    _spec("wait_on_stream", "wait_on_stream", "int", "sync"),
    _spec("wait_record_corr", "wait_on_cuda_event_record_corr_id", "int", "sync"),
    # process/thread metadata events (ph "M"): process_name, process_labels, thread_name
    _spec("meta_name", "name", "str", "meta"),
    _spec("meta_labels", "labels", "str", "meta"),
    # Inductor / Triton launches recorded as cpu_op
    _spec("kernel_name", "kernel_name", "str", "op"),
    _spec("kernel_file", "kernel_file", "str", "op"),
    _spec("num_warps", "num_warps", "int", "op"),
)

_KIND_DEFAULT: dict[str, Any] = {"int": -1, "float": float("nan"), "str": None}


def _arg_field(spec: ArgSpec) -> tuple[str, Any, Any]:
    # Raw keeps a zero-copy slice of the JSON text. Scalars are typed Any so that one odd
    # value (a string correlation id, a float stream) never fails the load; the defaults are
    # the column's missing value so that the common case converts to numpy in one C call.
    if spec.kind == "json":
        return (spec.column, msgspec.Raw, msgspec.field(name=spec.key, default=msgspec.Raw()))
    return (spec.column, Any, msgspec.field(name=spec.key, default=_KIND_DEFAULT[spec.kind]))


def family_specs(family: Family) -> tuple[ArgSpec, ...]:
    return tuple(s for s in ARG_SPECS if family in s.families)


FAMILY_ARGS: dict[Family, type] = {
    family: msgspec.defstruct(
        f"{family.title()}Args",
        [_arg_field(s) for s in family_specs(family)],
        frozen=True,
        gc=False,
    )
    for family in FAMILIES
}


class Event(msgspec.Struct, gc=False):
    """One Chrome-trace event as decoded; lives only for the length of one batch.

    `args` stays undecoded JSON text until the event's family is known.
    """

    ph: Any = None
    cat: Any = None
    name: Any = None
    pid: Any = None
    tid: Any = None
    ts: Any = float("nan")
    dur: Any = float("nan")
    id: Any = -1
    args: msgspec.Raw = msgspec.Raw()


class DeviceProperties(msgspec.Struct, frozen=True, kw_only=True):
    """The GPU facts Kineto writes under `deviceProperties` (one entry per visible GPU)."""

    id: int | None = None
    name: str = ""
    totalGlobalMem: int | None = None
    computeMajor: int | None = None
    computeMinor: int | None = None
    numSms: int | None = None
    warpSize: int | None = None
    gcnArchName: str | None = None


class ProcessGroup(msgspec.Struct, frozen=True, kw_only=True):
    pg_name: str | None = None
    pg_desc: str | None = None
    backend_config: str | None = None
    pg_size: int | None = None
    ranks: list[int] = []


class DistributedInfo(msgspec.Struct, frozen=True, kw_only=True):
    backend: str | None = None
    rank: int | None = None
    world_size: int | None = None
    pg_count: int | None = None
    pg_config: list[ProcessGroup] = []
    nccl_version: str | None = None


class TraceHeader(msgspec.Struct, kw_only=True):
    """Top-level keys of a Kineto trace. `metadata` is deliberately absent: never decoded."""

    traceEvents: list[msgspec.Raw] | None = None
    schemaVersion: Any = None
    # converted leniently after decoding: one odd field must not reject the whole trace
    deviceProperties: Any = None
    distributedInfo: Any = None
    record_shapes: Any = None
    with_stack: Any = None
    with_modules: Any = None
    with_flops: Any = None
    profile_memory: Any = None
    cuda_runtime_version: Any = None
    cuda_driver_version: Any = None
    cupti_version: Any = None
    hip_runtime_version: Any = None
    hip_driver_version: Any = None
    roctracer_version: Any = None
    displayTimeUnit: Any = None
    baseTimeNanoseconds: Any = None


# Older Kineto (before PyTorch 1.11 / 2022) spelled categories differently; both map here.
CATEGORY_ALIASES: dict[str, str] = {
    "operator": "cpu_op",
    "cpu_op": "cpu_op",
    "kernel": "kernel",
    "runtime": "cuda_runtime",
    "cuda_runtime": "cuda_runtime",
    "driver": "cuda_driver",
    "cuda_driver": "cuda_driver",
    "memcpy": "gpu_memcpy",
    "gpu_memcpy": "gpu_memcpy",
    "memset": "gpu_memset",
    "gpu_memset": "gpu_memset",
    "python_function": "python_function",
    "python function": "python_function",
    "user_annotation": "user_annotation",
    "user annotation": "user_annotation",
    "gpu_user_annotation": "gpu_user_annotation",
    "gpu user annotation": "gpu_user_annotation",
    "ac2g": "ac2g",
    "fwdbwd": "fwdbwd",
    "cpu_instant_event": "cpu_instant_event",
}

GPU_CATEGORIES = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
LAUNCH_CATEGORIES = frozenset({"cuda_runtime", "cuda_driver"})
HOST_TREE_CATEGORIES = frozenset({"cpu_op", "cuda_runtime", "cuda_driver", "python_function"})
GRAPH_LAUNCH_NAMES = frozenset({"cudaGraphLaunch", "hipGraphLaunch"})


def normalise_category(cat: str) -> str:
    """Map any Kineto spelling of a category to the modern one (unknown ones pass through)."""
    return CATEGORY_ALIASES.get(cat.strip().lower(), cat)
