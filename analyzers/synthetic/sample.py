"""A small, realistic Kineto trace of one training step of a tiny transformer on one MI300X.

Written for demos and tests: every shape of event the analysis reads is present (module
frames, cpu_ops with shapes, runtime launches linked to kernels by ac2g flows, an HtoD copy,
an all-reduce on its own stream, idle gaps). The output is byte-for-byte the same for a seed.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

HOST_PID, MAIN_TID, BWD_TID = 4242, 4242, 4300
GPU_PID, STREAM, COMM_STREAM = 0, 7, 13
BASE_US = 6_120_000_000.0
BF16, LONG = "c10::BFloat16", "long int"
B, S, H, HEADS, FFN, VOCAB, LAYERS = 4, 512, 1024, 16, 4096, 8192, 2
TOKENS = B * S
GEMM = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1"
GEMM_NOBIAS = "Cijk_Ailk_Bljk_BBS_BH_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1"
LAYER_NORM = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel"
    "<c10::BFloat16, float, false>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, "
    "c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
)
ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
    "<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add"
    "<c10::BFloat16>, std::array<char*, 3ul>)"
)
MUL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16,"
    " c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
    "std::array<char*, 3ul> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
    "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"
)
GELU = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl"
    "(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::"
    "{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >"
    "(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
    "{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::"
    "{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)"
)
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
DEVICE = {
    "id": 0,
    "name": "AMD Instinct MI300X",
    "totalGlobalMem": 206141652992,
    "computeMajor": 9,
    "computeMinor": 4,
    "maxThreadsPerBlock": 1024,
    "maxThreadsPerMultiprocessor": 2048,
    "regsPerBlock": 65536,
    "warpSize": 64,
    "sharedMemPerBlock": 65536,
    "numSms": 304,
    "gcnArchName": "gfx942:sramecc+:xnack-",
}


def _contiguous(dims: list[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(dims):
        strides.insert(0, step)
        step *= d
    return strides


def _gemm_us(k: int, n: int) -> float:
    """A (TOKENS x k) @ (k x n) bf16 GEMM at ~45 % of the MI300X's 1300 TFLOPS."""
    return 2 * TOKENS * k * n / (0.45 * 1300e12) * 1e6


class _Step:
    """Lays out host spans and GPU work on a shared clock (host and per-stream cursors)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.events: list[dict[str, Any]] = []
        self.host = BASE_US
        self.gpu = {STREAM: BASE_US, COMM_STREAM: BASE_US}
        self.correlation = 100
        self.external = 10
        self.tid = MAIN_TID

    def jitter(self, us: float) -> float:
        return round(us * self.rng.uniform(0.9, 1.1), 3)

    def _x(self, cat: str, name: str, ts: float, dur: float, tid: int, pid: int, **args: Any):
        event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid}
        start = round(ts, 3)
        event.update(ts=start, dur=round(round(ts + dur, 3) - start, 3))
        if args:
            event["args"] = args
        self.events.append(event)
        return event

    @contextmanager
    def span(self, cat: str, name: str, **args: Any) -> Iterator[None]:
        start = self.host
        self.host += self.jitter(2.0)
        yield
        self.host += self.jitter(1.5)
        self._x(cat, name, start, self.host - start, self.tid, HOST_PID, **args)
        self.host += self.jitter(0.8)  # siblings never touch, so none bleeds into the next

    def op(self, name: str, dims: list, types: list, concrete: list | None = None, **extra):
        self.external += 1
        args: dict[str, Any] = {"External id": self.external, "Record function id": 0}
        args["Input Dims"] = dims
        args["Input type"] = types
        args["Input Strides"] = [_contiguous(d) if d else [] for d in dims]
        args["Concrete Inputs"] = concrete or [""] * len(dims)
        return self.span("cpu_op", name, **args, **extra)

    def launch(self, kernel: str, dur_us: float, *, stream: int = STREAM, **kargs: Any) -> float:
        """A runtime launch, its flow pair and the kernel; returns the kernel's end."""
        self.correlation += 1
        corr = self.correlation
        ts = self.host
        copy = kernel.startswith("Memcpy")
        ids = {"External id": self.external, "correlation": corr}
        api, cbid = ("hipMemcpyAsync", 43) if copy else ("hipLaunchKernel", 3)
        self._x("cuda_runtime", api, ts, self.jitter(5.0), self.tid, HOST_PID, **ids, cbid=cbid)
        start = max(self.gpu[stream], ts + self.jitter(9.0)) + self.jitter(1.2)
        dur = self.jitter(dur_us)
        shape = {"grid": [max(1, TOKENS // 128), 1, 1], "block": [256, 1, 1]}
        gpu = {"device": 0, "stream": stream, **({} if copy else shape), **kargs}
        self._x(
            "gpu_memcpy" if copy else "kernel", kernel, start, dur, stream, GPU_PID, **ids, **gpu
        )
        flow = {"id": corr, "cat": "ac2g", "name": "ac2g"}
        self.events.append({"ph": "s", **flow, "pid": HOST_PID, "tid": self.tid, "ts": ts})
        self.events.append(
            {"ph": "f", **flow, "pid": GPU_PID, "tid": stream, "ts": start, "bp": "e"}
        )
        self.gpu[stream] = start + dur
        self.host = ts + self.jitter(7.0)
        return start + dur

    def module(self, name: str) -> Any:
        return self.span("python_function", f"nn.Module: {name}")

    # --- operators ---------------------------------------------------------------------
    def linear(self, module: str, k: int, n: int, *, bias: bool = True) -> None:
        flops_us = _gemm_us(k, n)
        with self.module(module), self.op("aten::linear", [[B, S, k], [n, k], [n]], [BF16] * 3):
            if bias:
                with self.op(
                    "aten::addmm",
                    [[n], [TOKENS, k], [k, n], [], []],
                    [BF16, BF16, BF16, "Scalar", "Scalar"],
                    ["", "", "", "1", "1"],
                ):
                    self.launch(GEMM, flops_us)
            else:
                with self.op("aten::mm", [[TOKENS, k], [k, n]], [BF16, BF16]):
                    self.launch(GEMM_NOBIAS, flops_us)

    def elementwise(self, name: str, kernel: str, n_inputs: int = 2, numel: int = 0) -> None:
        shape = [B, S, numel or H]
        dims = [shape] * n_inputs
        types = [BF16] * n_inputs
        concrete = None
        if name == "aten::gelu":
            dims, types, concrete = [shape, []], [BF16, "str"], ["", "'none'"]
        with self.op(name, dims, types, concrete):
            self.launch(kernel, B * S * (numel or H) * 2 * (n_inputs + 1) / 3.2e6)

    def layer_norm(self, module: str) -> None:
        dims = [[B, S, H], [], [H], [H], [], []]
        types = [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"]
        concrete = ["", f"[{H}]", "", "", "1e-05", "True"]
        with (
            self.module(module),
            self.op("aten::layer_norm", dims, types, concrete),
            self.op("aten::native_layer_norm", dims[:5], types[:5], concrete[:5]),
        ):
            self.launch(LAYER_NORM, TOKENS * H * 4 / 3.0e6)

    def attention(self) -> None:
        q = [B, HEADS, S, H // HEADS]
        dims = [q, q, q, [], [], [], []]
        types = [BF16, BF16, BF16, "Scalar", "Scalar", "", "Scalar"]
        concrete = ["", "", "", "0.", "True", "False", "0.125"]
        flops = 4 * B * HEADS * S * S * (H // HEADS) / 2  # causal: half the score matrix
        with (
            self.op("aten::scaled_dot_product_attention", dims[:3], types[:3]),
            self.op("aten::_scaled_dot_product_flash_attention", dims, types, concrete),
        ):
            self.launch("attn_fwd", flops / (0.35 * 1300e12) * 1e6)

    def all_reduce(self, numel: int) -> float:
        coll = {
            "Collective name": "allreduce",
            "dtype": "BFloat16",
            "In msg nelems": numel,
            "Out msg nelems": numel,
            "Group size": 8,
            "Process Group Name": "0",
            "Process Group Description": "default_pg",
            "Process Group Ranks": list(range(8)),
        }
        with (
            self.op("c10d::allreduce_", [[numel]], [BF16]),
            self.op("record_param_comms", [[numel]], [BF16], **coll),
        ):
            return self.launch(ALL_REDUCE, numel * 2 / 1.6e5, stream=COMM_STREAM, **coll)

    def host_pause(self, us: float) -> None:
        self.host += self.jitter(us)


def _block(step: _Step, layer: int, mlp_module: bool) -> None:
    """One transformer block; `mlp_module` puts its MLP (linear, GELU, linear) in a module."""
    with step.module(f"TransformerBlock_{layer}"):
        step.layer_norm(f"LayerNorm_{2 * layer}")
        step.linear(f"Linear_{4 * layer}", H, 3 * H)
        step.attention()
        step.linear(f"Linear_{4 * layer + 1}", H, H)
        step.elementwise("aten::add", ADD)
        step.layer_norm(f"LayerNorm_{2 * layer + 1}")
        with step.module(f"MLP_{layer}") if mlp_module else nullcontext():
            step.linear(f"Linear_{4 * layer + 2}", H, FFN)
            with step.module(f"GELU_{layer}"):
                step.elementwise("aten::gelu", GELU, numel=FFN)
            step.linear(f"Linear_{4 * layer + 3}", FFN, H)
        step.elementwise("aten::add", ADD)


def _record_step(step: _Step, layers: int, mlp_module: bool) -> None:
    with step.span("user_annotation", "ProfilerStep#1"):
        with step.op("aten::copy_", [[B, S], [B, S], []], [LONG, LONG, "Scalar"]):
            step.launch("Memcpy HtoD (Host -> Device)", 6.0, bytes=TOKENS * 8)
        step.host_pause(60.0)  # the data loader hands over the next batch: the GPU idles
        with step.module("TinyTransformer_0"):
            for layer in range(layers):
                _block(step, layer, mlp_module)
            step.linear(f"Linear_{4 * layers}", H, VOCAB, bias=False)
        step.elementwise("aten::mul", MUL, numel=VOCAB)
        step.tid = BWD_TID
        for _layer in range(layers):
            for k, n in ((FFN, H), (H, FFN), (H, H), (H, 3 * H)):
                with step.span("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0"):
                    with step.op("aten::mm", [[TOKENS, n], [n, k]], [BF16, BF16]):
                        step.launch(GEMM_NOBIAS, _gemm_us(n, k))
                    with step.op("aten::mm", [[k, TOKENS], [TOKENS, n]], [BF16, BF16]):
                        step.launch(GEMM_NOBIAS, _gemm_us(n, k))
            step.elementwise("aten::gelu_backward", GELU.replace("#1", "#2"), numel=FFN)
        step.tid = MAIN_TID
        comm_end = step.all_reduce(layers * (4 * H * H + 2 * H * FFN))
        step.host_pause(25.0)
        with step.span("cuda_runtime", "hipStreamWaitEvent"):
            step.gpu[STREAM] = max(step.gpu[STREAM], comm_end)
        with step.span("user_annotation", "Optimizer.step#AdamW.step"):
            for _ in range(3):
                step.elementwise("aten::mul", MUL, numel=H)
                step.elementwise("aten::add", ADD, numel=H)


def _metadata() -> list[dict[str, Any]]:
    def meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
        return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "ts": BASE_US, "args": args}

    return [
        meta("process_name", HOST_PID, 0, name="python"),
        meta("thread_name", HOST_PID, MAIN_TID, name="thread 4242 (python)"),
        meta("thread_name", HOST_PID, BWD_TID, name="thread 4300 (pt_autograd_0)"),
        meta("process_name", GPU_PID, 0, name="GPU 0"),
        meta("process_labels", GPU_PID, 0, labels="AMD Instinct MI300X"),
        meta("thread_name", GPU_PID, STREAM, name="stream 7"),
        meta("thread_name", GPU_PID, COMM_STREAM, name="stream 13"),
    ]


def write_sample_trace(
    path: Path, *, seed: int = 0, layers: int = LAYERS, mlp_module: bool = False
) -> Path:
    """Write the sample trace (gzip, fixed mtime) to `path` and return it.

    `seed` draws the timing jitter; `layers` is the number of transformer blocks (each adds
    its forward and backward kernels and grows the all-reduce); `mlp_module` wraps each
    block's MLP in an `nn.Module: MLP_<n>` frame (a GEMM, GELU, GEMM fusion candidate).
    """
    if layers < 1:
        raise ValueError("the sample model needs at least one layer")
    step = _Step(seed)
    _record_step(step, layers, mlp_module)
    document = {
        "schemaVersion": 1,
        "deviceProperties": [DEVICE],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1},
        "record_shapes": 1,
        "with_stack": 1,
        "with_modules": 1,
        "hip_runtime_version": 60342,
        "hip_driver_version": 60342,
        "roctracer_version": 4,
        "traceEvents": _metadata() + step.events,
        "traceName": "rooflens_sample_trace",
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
    }
    return write_document(Path(path), document, compress=True)


def write_document(path: Path, document: dict, *, compress: bool | None = None) -> Path:
    """Write a generated trace document as Kineto does: compact JSON, gzip (fixed mtime, so
    the bytes are reproducible) when `compress` or, by default, when the name ends in .gz."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document, separators=(",", ":")).encode("utf-8")
    if path.name.endswith(".gz") if compress is None else compress:
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path
