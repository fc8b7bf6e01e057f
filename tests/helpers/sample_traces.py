"""Generated traces for the tests that run without ../shared, and facts read from their raw
JSON to hold the engine's numbers against.

The traces come from the package's generator (`rooflens.analyzers.synthetic.sample`): a
training step of a small transformer on one MI300X. Its planted facts: per layer, ten
forward kernels (two layer norms, four GEMMs, attention, two adds, GELU) and nine backward
ones (eight GEMMs, GELU backward); besides the layers, the LM-head GEMM, a mul, one HtoD copy
of `B*S` int64 tokens, one all-reduce on its own stream and six optimizer kernels. Variants
edit the generated document (`write_variant`): another GPU name, host events removed,
launches unlinked, a metadata block with secrets.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rooflens.analyzers.synthetic.sample import GPU_PID, B, S, write_sample_trace

Document = dict[str, Any]
Interval = tuple[float, float]

KERNELS_PER_LAYER = 10 + 9  # forward + backward
FIXED_KERNELS = 1 + 1 + 1 + 6  # LM head, mul, all-reduce, optimizer
COPY_BYTES = B * S * 8  # the int64 token batch copied host to device


def gpu_events(layers: int) -> int:
    """Kernels plus the one copy of a sample trace with `layers` blocks."""
    return KERNELS_PER_LAYER * layers + FIXED_KERNELS + 1


def read_document(path: Path) -> Document:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)


def write_document(document: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document, separators=(",", ":")).encode("utf-8")
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return path


def write_variant(
    path: Path, edit: Callable[[Document], None] | None = None, **generator: Any
) -> Path:
    """The sample trace (generator keywords: seed, layers, mlp_module), edited in place."""
    written = write_sample_trace(path, **generator)
    if edit is None:
        return written
    document = read_document(written)
    edit(document)
    return write_document(document, path)


# --- edits ---------------------------------------------------------------------------------


P100 = {  # a GPU outside the platform catalogue
    "computeMajor": 6,
    "computeMinor": 0,
    "numSms": 56,
    "totalGlobalMem": 17071734784,
    "warpSize": 32,
    "gcnArchName": None,
}


def renamed_gpu(name: str, **properties: Any) -> Callable[[Document], None]:
    """The device named `name` in deviceProperties and in the GPU process label, with
    `properties` replacing its own (None removes one)."""

    def edit(document: Document) -> None:
        device = document["deviceProperties"][0]
        device.update(name=name, **properties)
        for key in [k for k, v in device.items() if v is None]:
            del device[key]
        for event in document["traceEvents"]:
            if event.get("name") == "process_labels" and event.get("pid") == GPU_PID:
                event["args"]["labels"] = name

    return edit


HOST_ONLY = ("cpu_op", "python_function", "user_annotation")


def gpu_only(document: Document) -> None:
    """No operator, module or annotation left: what ProfilerActivity.CUDA alone records (the
    runtime launches, their flows and the device's work)."""
    document["traceEvents"] = [e for e in document["traceEvents"] if e.get("cat") not in HOST_ONLY]


def unlinked(count: int) -> Callable[[Document], None]:
    """The first `count` kernels lose their flow pair and their correlation id."""

    def edit(document: Document) -> None:
        events = document["traceEvents"]
        kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
        cut = {k["args"]["correlation"] for k in kernels[:count]}
        for kernel in kernels[:count]:
            del kernel["args"]["correlation"]
            del kernel["args"]["External id"]
        document["traceEvents"] = [
            e for e in events if not (e.get("cat") == "ac2g" and e.get("id") in cut)
        ]

    return edit


SECRET = "hf_planted0123456789secret"
SECRET_MARKERS = ("started_by", "base_image", "__ignore_me", "HF_TOKEN", SECRET)


def with_secret_metadata(document: Document) -> None:
    """A `metadata` block as some job launchers write it, with a token in its environment."""
    document["metadata"] = {
        "started_by": "ci-bot",
        "base_image": "registry.example/train:1.0",
        "__ignore_me": {"note": "internal"},
        "env": {"HF_TOKEN": SECRET, "WORLD_SIZE": "8"},
    }


# --- facts from the raw events ---------------------------------------------------------------


def union(intervals: Iterable[Interval]) -> list[Interval]:
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def length(intervals: Iterable[Interval]) -> float:
    return sum(b - a for a, b in union(intervals))


def overlap(a: Iterable[Interval], b: Iterable[Interval]) -> float:
    """Length of the time covered by both interval sets."""
    left, right = union(a), union(b)
    return sum(max(0.0, min(x1, y1) - max(x0, y0)) for x0, x1 in left for y0, y1 in right)


@dataclass(frozen=True)
class GpuFacts:
    """The device's events of a generated trace, in µs, split as the timeline splits them."""

    compute: list[Interval]
    comm: list[Interval]
    copies: list[Interval]
    comm_names: list[str]

    @classmethod
    def of(cls, document: Document) -> GpuFacts:
        compute, comm, copies, names = [], [], [], []
        for e in document["traceEvents"]:
            if e.get("ph") != "X" or e.get("pid") != GPU_PID:
                continue
            interval = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
            if e["cat"] == "gpu_memcpy":
                copies.append(interval)
            elif "nccl" in e["name"].lower():
                comm.append(interval)
                names.append(e["name"])
            else:
                compute.append(interval)
        return cls(compute, comm, copies, names)

    @property
    def everything(self) -> list[Interval]:
        return self.compute + self.comm + self.copies

    @property
    def total_us(self) -> float:
        spans = self.everything
        return max(b for _, b in spans) - min(a for a, _ in spans)

    @property
    def idle_us(self) -> float:
        return self.total_us - length(self.everything)

    @property
    def computation_us(self) -> float:
        return length(self.compute)

    @property
    def exposed_comm_us(self) -> float:
        return length(self.comm) - overlap(self.comm, self.compute)

    @property
    def exposed_copy_us(self) -> float:
        busy = self.compute + self.comm
        return length(self.copies) - overlap(self.copies, busy)


def kernels_named(document: Document, needle: str) -> list[Document]:
    """The GPU kernels whose name holds `needle`, in time order."""
    found = [
        e
        for e in document["traceEvents"]
        if e.get("cat") == "kernel" and needle in e.get("name", "")
    ]
    return sorted(found, key=lambda e: e["ts"])


def module_kernels(document: Document, module: str) -> list[Document]:
    """The GPU events launched inside the host span of `nn.Module: <module>`, in time order."""
    events = document["traceEvents"]
    (frame,) = [e for e in events if e.get("name") == f"nn.Module: {module}"]
    start, end = frame["ts"], frame["ts"] + frame["dur"]
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "cuda_runtime"
        and e.get("tid") == frame["tid"]
        and start <= e["ts"] <= end
        and "correlation" in e.get("args", {})
    }
    found = [
        e
        for e in events
        if e.get("pid") == GPU_PID
        and e.get("ph") == "X"
        and e.get("args", {}).get("correlation") in launched
    ]
    return sorted(found, key=lambda e: e["ts"])
