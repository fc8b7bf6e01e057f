"""A general writer of Kineto traces with exact timing, for the generated situations.

Host side: several threads, `python_function` frames (their `Python id`/`Python parent id`
worked out from nesting when the document is written), `cpu_op`s with `External id`,
`user_annotation`s, runtime calls that launch nothing (allocation, stream/event calls,
synchronisation). GPU side: several streams with a queue model. An event launched by a call
starting at `c` on stream `s` starts at

    max(end of the previous event on s + gap_us, c + latency_us, every event s waits on)

where "waits on" is a `cudaStreamWaitEvent` issued earlier on `s` (the time the recorded
event completes, or an external one's time). With a `queue_limit`, a launch call blocks
until fewer than that many events of its stream are launched but not started.

Blocking calls (a stream or device synchronise, a copy to pageable memory) return
`return_us` after what they wait for. Every time is in µs; written times are rounded to
the ns, as Kineto writes them. Names follow the vendor: `cuda*` (NVIDIA) or `hip*` (AMD).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .devices import API, Vendor
from .sample import write_document

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass(frozen=True)
class Timing:
    """How long host calls take and how the GPU picks work up (µs)."""

    op_launch_at_us: float = 8.0  # a launching operator calls the runtime this long in
    call_us: float = 6.0  # a launch call
    op_tail_us: float = 3.0  # an operator returns this long after its last call
    latency_us: float = 10.0  # an idle stream starts an event this long after its call
    gap_us: float = 0.0  # the GPU's own gap between consecutive events of one stream
    return_us: float = 5.0  # a blocking call returns this long after what it waits for


@dataclass(frozen=True)
class Launched:
    """What one launch produced: the GPU event and its host call."""

    correlation: int
    stream: int
    start: float
    end: float
    call_start: float
    call_end: float


@dataclass
class _Stream:
    free: float = float("-inf")  # end of its last event
    barrier: float = float("-inf")  # latest event it was told to wait on
    starts: list[float] = field(default_factory=list)  # start of every event, in order


class Writer:
    """Events of one process and one GPU, at given times (see the module docstring)."""

    def __init__(
        self,
        *,
        device: dict[str, Any],
        host_pid: int,
        main_tid: int,
        vendor: Vendor = "nvidia",
        timing: Timing | None = None,
        queue_limit: int | None = None,
        gpu_pid: int = 0,
        sync_events: bool = False,
    ) -> None:
        self.device, self.vendor = device, vendor
        self.host_pid, self.main_tid, self.gpu_pid = host_pid, main_tid, gpu_pid
        self.timing = timing or Timing()
        self.queue_limit = queue_limit
        self.events: list[dict[str, Any]] = []
        self.threads: dict[int, str] = {main_tid: "python3"}
        self.streams: dict[int, _Stream] = {}
        self.correlation, self.external = 1000, 0
        self.last_call: dict[str, Any] = {}
        # CUPTI's synchronisation records, as PyTorch writes them with enable_cuda_sync_events
        self.sync_events = sync_events
        self.last_record: tuple[int, int] = (-1, -1)  # the last event record's (corr id, stream)

    # --- names ------------------------------------------------------------------------
    def api(self, key: str) -> str:
        """The vendor's name of a runtime call ("launch", "free", "stream_sync"...)."""
        return API[key][self.vendor][0]

    def _call_args(self, name: str) -> dict[str, Any]:
        ids = {api[self.vendor][0]: api[self.vendor][1] for api in API.values()}
        number = ids.get(name)
        if number is None:
            return {}
        return {"cbid": number} if self.vendor == "nvidia" else {"cid": number}

    # --- host events ------------------------------------------------------------------
    def x(self, cat: str, name: str, ts: float, dur: float, pid: int, tid: int, **args: Any):
        start = round(ts, 3)
        event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": start}
        event["dur"] = round(round(ts + dur, 3) - start, 3)
        if args:
            event["args"] = args
        self.events.append(event)
        return event

    def thread(self, tid: int, name: str) -> int:
        """Name a host thread (its `thread_name` metadata); returns the tid."""
        self.threads[tid] = name
        return tid

    def frame(self, name: str, start: float, end: float, tid: int | None = None) -> None:
        """A Python frame (`file.py(line): function`) or `nn.Module: Name_0` frame."""
        self.x("python_function", name, start, end - start, self.host_pid, tid or self.main_tid)

    def annotation(self, name: str, start: float, end: float, tid: int | None = None) -> int:
        """A `user_annotation` (record_function, DataLoader, Optimizer.step...)."""
        self.external += 1
        tid = tid or self.main_tid
        args = {"External id": self.external, "Record function id": 0}
        self.x("user_annotation", name, start, end - start, self.host_pid, tid, **args)
        return self.external

    def step(self, number: int, start: float, end: float, tid: int | None = None) -> None:
        self.annotation(f"ProfilerStep#{number}", start, end, tid)

    def op(self, name: str, start: float, end: float, tid: int | None = None, **args: Any) -> int:
        """A `cpu_op`; `args` add e.g. `Input Dims`/`Input type` or collective fields."""
        self.external += 1
        tid = tid or self.main_tid
        ids = {"External id": self.external, "Record function id": 0}
        self.x("cpu_op", name, start, end - start, self.host_pid, tid, **ids, **args)
        return self.external

    def runtime(
        self, name: str, start: float, dur: float, tid: int | None = None, **args: Any
    ) -> float:
        """A runtime call that launches nothing (cudaFree, cudaMalloc...); returns its end."""
        self.correlation += 1
        ids = {"External id": self.external, "correlation": self.correlation}
        cat = "cuda_driver" if name.startswith("cu") and not name.startswith("cuda") else None
        self.x(
            cat or "cuda_runtime",
            name,
            start,
            dur,
            self.host_pid,
            tid or self.main_tid,
            **ids,
            **self._call_args(name),
            **args,
        )
        return start + dur

    # --- the GPU queue ----------------------------------------------------------------
    def _stream(self, stream: int) -> _Stream:
        return self.streams.setdefault(stream, _Stream())

    def free(self, stream: int) -> float:
        """When everything launched on `stream` so far has finished."""
        return self._stream(stream).free

    def drained(self) -> float:
        """When everything launched on every stream so far has finished."""
        return max((s.free for s in self.streams.values()), default=float("-inf"))

    def queued(self, stream: int, at: float) -> int:
        """Events of `stream` launched so far that have not started at `at`."""
        starts = self._stream(stream).starts
        return len(starts) - bisect.bisect_right(starts, at)

    def _slot(self, stream: int, at: float) -> float:
        """When a launch call made at `at` gets a slot in the stream's queue."""
        starts = self._stream(stream).starts
        if self.queue_limit is None or self.queued(stream, at) < self.queue_limit:
            return at
        return starts[len(starts) - self.queue_limit]  # the start that frees a slot

    def start_of(self, stream: int, call_start: float, after: float = float("-inf")) -> float:
        """When an event launched onto `stream` at `call_start` would start."""
        s, t = self._stream(stream), self.timing
        return max(s.free + t.gap_us, call_start + t.latency_us, s.barrier, after)

    def launch(
        self,
        name: str,
        call_start: float,
        dur: float,
        *,
        stream: int = 7,
        tid: int | None = None,
        api: str | None = None,
        call_us: float | None = None,
        cat: str = "kernel",
        after: float = float("-inf"),
        gpu_args: dict[str, Any] | None = None,
    ) -> Launched:
        """A launch call at `call_start`, its ac2g flow pair and the GPU event of `dur` on
        `stream`. `after` holds the event back (a blocking copy that waits for its data)."""
        t = self.timing
        slot = self._slot(stream, call_start)
        call_end = max(call_start + (t.call_us if call_us is None else call_us), slot + 1.0)
        start = self.start_of(stream, call_start, after)
        self.correlation += 1
        corr, tid = self.correlation, tid or self.main_tid
        ids = {"External id": self.external, "correlation": corr}
        name_api = api or (self.api("memcpy") if cat == "gpu_memcpy" else self.api("launch"))
        cat_api = "cuda_driver" if name_api.startswith("cu") and "cuda" not in name_api else ""
        self.last_call = self.x(
            cat_api or "cuda_runtime",
            name_api,
            call_start,
            call_end - call_start,
            self.host_pid,
            tid,
            **ids,
            **self._call_args(name_api),
        )
        self.x(
            cat,
            name,
            start,
            dur,
            self.gpu_pid,
            stream,
            **self._gpu_args(ids, stream, cat),
            **(gpu_args or {}),
        )
        self._flow(corr, (tid, call_start), (stream, start))
        s = self._stream(stream)
        s.free = start + dur
        s.starts.append(start)
        return Launched(corr, stream, start, start + dur, call_start, call_end)

    def _flow(self, corr: int, host: tuple[int, float], gpu: tuple[int, float]) -> None:
        """The ac2g pair linking a launch call (thread, start) to its GPU event (stream, start)."""
        flow = {"id": corr, "cat": "ac2g", "name": "ac2g"}
        self.events.append(
            {"ph": "s", **flow, "pid": self.host_pid, "tid": host[0], "ts": round(host[1], 3)}
        )
        self.events.append(
            {
                "ph": "f",
                **flow,
                "pid": self.gpu_pid,
                "tid": gpu[0],
                "ts": round(gpu[1], 3),
                "bp": "e",
            }
        )

    def _gpu_args(self, ids: dict[str, Any], stream: int, cat: str) -> dict[str, Any]:
        device = self.device["id"]
        if cat != "kernel":
            return {**ids, "device": device, "context": 1, "stream": stream}
        if self.vendor == "amd":
            return {
                **ids,
                "device": device,
                "stream": stream,
                "kind": "Dispatch Kernel",
                "grid": [1024, 1, 1],
                "block": [256, 1, 1],
            }
        return {
            **ids,
            "queued": 0,
            "device": device,
            "context": 1,
            "stream": stream,
            "registers per thread": 64,
            "shared memory": 0,
            "grid": [1024, 1, 1],
            "block": [256, 1, 1],
        }

    def launching_op(
        self,
        name: str,
        kernel: str,
        start: float,
        dur: float,
        *,
        stream: int = 7,
        tid: int | None = None,
        api: str | None = None,
        op_args: dict[str, Any] | None = None,
        nbytes: int = 0,
    ) -> Launched:
        """An operator at `start` whose launch call comes `op_launch_at_us` in; it returns
        `op_tail_us` after the call. A `kernel` named "Memcpy ..." is a copy of `nbytes`."""
        t = self.timing
        self.op(name, start, start, tid, **(op_args or {}))
        event = self.events[-1]
        copy = kernel.startswith("Memcpy")
        extra = {"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / dur / 1e3} if copy else {}
        launched = self.launch(
            kernel,
            start + t.op_launch_at_us,
            dur,
            stream=stream,
            tid=tid,
            api=api,
            cat="gpu_memcpy" if copy else "kernel",
            gpu_args=extra,
        )
        event["dur"] = round(round(launched.call_end + t.op_tail_us, 3) - event["ts"], 3)
        return launched

    def copy(
        self,
        kind: str,
        call_start: float,
        nbytes: int,
        dur: float,
        *,
        stream: int = 7,
        tid: int | None = None,
        blocking: bool = False,
    ) -> Launched:
        """A `cudaMemcpyAsync` of `nbytes` (`kind`: "Memcpy HtoD (Pinned -> Device)"...).
        A blocking call (to or from pageable memory) returns `return_us` after the copy."""
        extra = {"bytes": nbytes, "memory bandwidth (GB/s)": nbytes / dur / 1e3}
        got = self.launch(
            kind, call_start, dur, stream=stream, tid=tid, cat="gpu_memcpy", gpu_args=extra
        )
        if blocking:
            call, end = self.last_call, got.end + self.timing.return_us
            call["dur"] = round(round(end, 3) - call["ts"], 3)
            got = Launched(got.correlation, stream, got.start, got.end, call_start, end)
        return got

    def record_event(self, call_start: float, stream: int, tid: int | None = None) -> float:
        """`cudaEventRecord` on `stream`; returns when the event completes on the GPU."""
        s = self._stream(stream)
        self.runtime(self.api("event_record"), call_start, 2.0, tid)
        self.last_record = (self.correlation, stream)
        return max(s.free, call_start + self.timing.latency_us)

    def wait_event(
        self, call_start: float, stream: int, completes: float, tid: int | None = None
    ) -> float:
        """`cudaStreamWaitEvent`: later work on `stream` waits for an event completing at
        `completes` (recorded on another stream, or by a peer). Returns the call's end."""
        s = self._stream(stream)
        s.barrier = max(s.barrier, completes)
        end = self.runtime(self.api("stream_wait"), call_start, 2.0, tid)
        if self.sync_events and self.last_record[0] >= 0:
            corr, source = self.last_record
            self.x(
                "cuda_sync",
                "Stream Wait Event",
                max(call_start + self.timing.latency_us, completes),
                1.0,
                self.gpu_pid,
                stream,
                cuda_sync_kind="Stream Wait Event",
                stream=stream,
                correlation=self.correlation,
                device=self.device["id"],
                wait_on_stream=source,
                wait_on_cuda_event_record_corr_id=corr,
            )
            self.last_record = (-1, -1)
        return end

    def sync(self, call_start: float, stream: int | None = None, tid: int | None = None) -> float:
        """Stream (or, with no stream, device) synchronise; returns when the call returns."""
        done = self.drained() if stream is None else self.free(stream)
        end = max(call_start + 2.0, done + self.timing.return_us)
        key = "device_sync" if stream is None else "stream_sync"
        return self.runtime(self.api(key), call_start, end - call_start, tid)

    # --- the document -----------------------------------------------------------------
    def metadata(self, ts: float) -> list[dict[str, Any]]:
        def meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
            return {
                "name": kind,
                "ph": "M",
                "ts": round(ts, 3),
                "pid": pid,
                "tid": tid,
                "args": args,
            }

        out = [
            meta("process_name", self.host_pid, 0, name="python3"),
            meta("process_labels", self.host_pid, 0, labels="CPU"),
            meta("process_name", self.gpu_pid, 0, name="python3"),
            meta("process_labels", self.gpu_pid, 0, labels=f"GPU {self.device['id']}"),
        ]
        for tid, name in sorted(self.threads.items()):
            out.append(meta("thread_name", self.host_pid, tid, name=f"thread {tid} ({name})"))
        for stream in sorted(self.streams):
            out.append(meta("thread_name", self.gpu_pid, stream, name=f"stream {stream} "))
        return out

    def document(self, trace_name: str, **header: Any) -> dict[str, Any]:
        """The whole trace: metadata, events (Python ids filled in), Kineto's top-level keys;
        `header` adds or overrides keys (`distributedInfo`, `deviceProperties`...)."""
        python_ids(self.events)
        shapes = any("Input Dims" in e.get("args", {}) for e in self.events if e["cat"] == "cpu_op")
        start = min((e["ts"] for e in self.events), default=0.0)
        versions = (
            {"cuda_runtime_version": 12040, "cuda_driver_version": 12090, "cupti_version": 22}
            if self.vendor == "nvidia"
            else {"hip_runtime_version": 60342, "hip_driver_version": 60342, "roctracer_version": 4}
        )
        document = {
            "schemaVersion": 1,
            "deviceProperties": [self.device],
            **versions,
            "record_shapes": int(shapes),
            "with_stack": 1,
            "with_modules": 1,
            "profile_memory": 0,
            "traceEvents": self.metadata(start) + self.events,
            "traceName": trace_name,
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1700000000000000000,
        }
        document.update(header)
        return document

    def write(self, path: Path, trace_name: str, **header: Any) -> Path:
        return write_document(Path(path), self.document(trace_name, **header))


def python_ids(events: Iterable[dict[str, Any]]) -> None:
    """Number the Python frames of each thread in start order and give each the id of the
    innermost frame holding it (`Python parent id`, null at the top), as Kineto does."""
    frames = [e for e in events if e.get("cat") == "python_function"]
    frames.sort(key=lambda e: (e["pid"], e["tid"], e["ts"], -e["dur"]))
    stacks: dict[tuple[Any, Any], list[tuple[float, int]]] = {}
    for number, event in enumerate(frames, start=1):
        stack = stacks.setdefault((event["pid"], event["tid"]), [])
        end = event["ts"] + event["dur"]
        while stack and stack[-1][0] < end:
            stack.pop()
        parent = stack[-1][1] if stack else None
        event["args"] = {"Python parent id": parent, "Python id": number}
        stack.append((end, number))
