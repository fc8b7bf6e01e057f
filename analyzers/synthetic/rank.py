"""One rank's events for the synthetic job (job.py): launching operators with their
recorded inputs, runtime launches with their flow events, kernels on a compute and a
communication stream, and host annotations; and the rank's trace document with its
`distributedInfo`. Times in µs on the clock the job shares.
"""

from __future__ import annotations

from typing import Any

from .host import DEVICE, HOST_PID, MAIN_TID

COMPUTE_STREAM, COMM_STREAM = 7, 21
GPU_PID = 0
OP_LEAD_US = 15.0  # a launching op starts this long before its kernel
LAUNCH_LEAD_US = 10.0  # and its launch call this long before
LAUNCH_CALL_US = 5.0
CUDA_LAUNCH_KERNEL_CBID = 211  # CUPTI's callback id of cudaLaunchKernel


def shapes(dims: list, dtype: str) -> dict[str, Any]:
    """An operator's recorded inputs: shapes, dtypes and (tensors only) empty scalars."""
    n = len(dims)
    return {"Input Dims": dims, "Input type": [dtype] * n, "Concrete Inputs": [""] * n}


class RankTrace:
    """The events of one rank, appended in any order (the loader sorts nothing it needs)."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.events: list[dict[str, Any]] = []
        self.correlation = 1000
        self.external = 10

    def x(self, cat: str, name: str, ts: float, dur: float, pid: int, tid: int, **args: Any):
        event: dict[str, Any] = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid}
        event.update(ts=round(ts, 3), dur=round(dur, 3))
        if args:
            event["args"] = args
        self.events.append(event)

    def annotation(self, name: str, ts: float, dur: float) -> None:
        """A host `user_annotation` span (a profiler step, the data loader)."""
        self.x("user_annotation", name, ts, dur, HOST_PID, MAIN_TID)

    def kernel(
        self, op: str, kernel: str, ts: float, dur: float, stream: int, inputs: tuple, **args: Any
    ) -> None:
        """`op` (its `inputs`: shapes and dtype, and `args`) launching `kernel` on `stream` at
        `ts` for `dur`; the kernel carries `args` too, as NCCL kernels carry the c10d args."""
        self.external += 1
        self.correlation += 1
        op_args = {"External id": self.external, **shapes(*inputs), **args}
        self.x("cpu_op", op, ts - OP_LEAD_US, OP_LEAD_US - 3.0, HOST_PID, MAIN_TID, **op_args)
        ids = {"External id": self.external, "correlation": self.correlation}
        call = ts - LAUNCH_LEAD_US
        launch = {**ids, "cbid": CUDA_LAUNCH_KERNEL_CBID}
        self.x(
            "cuda_runtime", "cudaLaunchKernel", call, LAUNCH_CALL_US, HOST_PID, MAIN_TID, **launch
        )
        geometry = {"grid": [64, 1, 1], "block": [256, 1, 1]}
        gpu = {**ids, "device": 0, "stream": stream, **geometry, **args}
        self.x("kernel", kernel, ts, dur, GPU_PID, stream, **gpu)
        flow = {"id": self.correlation, "cat": "ac2g", "name": "ac2g"}
        self.events.append({"ph": "s", **flow, "pid": HOST_PID, "tid": MAIN_TID, "ts": call})
        self.events.append(
            {"ph": "f", **flow, "pid": GPU_PID, "tid": stream, "ts": round(ts, 3), "bp": "e"}
        )

    def document(self, world_size: int, group: dict[str, Any]) -> dict[str, Any]:
        """The rank's whole trace: its events under Kineto's top-level keys."""
        return {
            "schemaVersion": 1,
            "deviceProperties": [DEVICE],
            "distributedInfo": {
                "backend": "nccl",
                "rank": self.rank,
                "world_size": world_size,
                "pg_count": 1,
                "pg_config": [group],
            },
            "record_shapes": 1,
            "cuda_runtime_version": 12040,
            "traceEvents": self.events,
            "traceName": f"rooflens_synthetic_job_rank{self.rank}",
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1700000000000000000,
        }
