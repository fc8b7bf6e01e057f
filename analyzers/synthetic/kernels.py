"""Kernel names as vendors' libraries spell them, and composite host actions (a paced run
of launching operators, a blocking `.to("cpu")`, a collective, a data-loader fetch) built on
`synthetic_writer.Writer`, for the generated situations."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from .writer import Launched, Writer

# NVIDIA (cuBLAS/cuDNN sm90, PyTorch's own) kernels.
NV_GEMM = (
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_"
    "execute_segment_k_off_kernel__5x_cublas"
)
NV_CONV = (
    "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_"
    "warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"
)
NV_CONV_DGRAD = NV_CONV.replace("fprop", "dgrad")
ADD_BF16 = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add"
    "<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add"
    "<c10::BFloat16>, std::array<char*, 3ul>)"
)
RELU_BF16 = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, "
    "at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#14}::"
    "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >"
)
THRESHOLD_BWD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
    "threshold_kernel_impl<c10::BFloat16>(at::TensorIteratorBase&, c10::BFloat16, "
    "c10::BFloat16)::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul> >"
)
ADD_F32 = ADD_BF16.replace("c10::BFloat16", "float")
RELU_F32 = RELU_BF16.replace("c10::BFloat16", "float")
THRESHOLD_F32 = THRESHOLD_BWD.replace("c10::BFloat16", "float")
FOREACH_ADD = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
    "(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
    "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::plus<float>, float>"
)
FUSED_ADAM = (
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
    "(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::"
    "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, "
    "double, double, double, double, bool, float*, float*>"
)
COPY_KERNEL = (
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda"
    "(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()"
    "() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, "
    "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::"
    "LoadWithCast<1>, at::native::memory::StoreWithCast<1> >"
)
CAT_KERNEL = (
    "void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::"
    "(anonymous namespace)::OpaqueType<4u>, unsigned int, 1, 128, 1>"
)
# AMD (hipBLASLt/Tensile, MIOpen) kernels.
AMD_GEMM = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1"
AMD_CONV = "igemm_fwd_gtcx35_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wt1x2_gkgs"
AMD_CONV_BWD = "igemm_bwd_gtcx35_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wt1x2_gkgs"
# NCCL.
NCCL_ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
NCCL_BROADCAST = "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

H2D_PINNED = "Memcpy HtoD (Pinned -> Device)"
H2D_PAGEABLE = "Memcpy HtoD (Pageable -> Device)"
D2H_PAGEABLE = "Memcpy DtoH (Device -> Pageable)"
D2D = "Memcpy DtoD (Device -> Device)"

Op = tuple[str, str, float]  # operator, kernel it launches, kernel µs


def seeded(seed: int) -> tuple[random.Random, int, float]:
    """The seed's random stream, host pid and start time: a seed changes the bytes (pid,
    clock) even where it changes no planted figure."""
    return random.Random(seed), 2000 + seed % 30000, 7_000_000_000.0 + 1_000_000.0 * (seed % 997)


def paced(
    w: Writer,
    start: float,
    ops: Sequence[Op],
    spacing: float,
    *,
    tid: int | None = None,
    stream: int = 7,
) -> tuple[float, list[Launched]]:
    """`ops` launched `spacing` apart from `start`; returns when the last has returned
    (`start + len(ops) * spacing`) and what was launched."""
    out = [
        w.launching_op(name, kernel, start + i * spacing, dur, tid=tid, stream=stream)
        for i, (name, kernel, dur) in enumerate(ops)
    ]
    return start + len(ops) * spacing, out


TO_CPU = ("aten::to", "aten::_to_copy", "aten::copy_")
ITEM = ("aten::item", "aten::_local_scalar_dense")


def to_host(
    w: Writer,
    start: float,
    nbytes: int,
    copy_us: float,
    *,
    stream: int = 7,
    names: tuple[str, ...] = TO_CPU,
    kind: str = D2H_PAGEABLE,
) -> float:
    """`tensor.to("cpu")` (or `.item()`, `names=ITEM`) into pageable memory (or, with
    `kind=H2D_PAGEABLE`, `.to("cuda")` from it): nested operators 2 µs apart around a
    cudaMemcpyAsync 2 µs after the innermost. The copy waits for everything queued before it
    on the stream, and a copy to or from pageable memory returns only once it has landed;
    each operator returns 2 µs after the one inside it. Returns when the outermost does."""
    ops = []
    for i, name in enumerate(names):
        w.op(name, start + 2.0 * i, start + 2.0 * i)
        ops.append(w.events[-1])
    call = start + 2.0 * len(names) + 2.0
    got = w.copy(kind, call, nbytes, copy_us, stream=stream, blocking=True)
    for depth, event in enumerate(ops):
        end = got.call_end + 2.0 * (len(names) - depth)
        event["dur"] = round(round(end, 3) - event["ts"], 3)
    return got.call_end + 2.0 * len(names)


def collective(
    w: Writer,
    start: float,
    *,
    kernel: str,
    collective_name: str,
    annotation: str,
    numel: int,
    dur: float,
    issue_us: float,
    stream: int,
    tid: int | None = None,
    group_size: int = 8,
) -> Launched:
    """`record_param_comms` (with the c10d fields Kineto records) around an `nccl:<op>`
    annotation whose launch puts `kernel` on the communication `stream`; the host spends
    `issue_us` in it."""
    fields: dict[str, Any] = {
        "Collective name": collective_name,
        "dtype": "Float",
        "In msg nelems": numel,
        "Out msg nelems": numel,
        "Group size": group_size,
        "Process Group Name": "0",
        "Process Group Description": "default_pg",
        "Process Group Ranks": str(list(range(group_size))),
        "Rank": 0,
    }
    w.op("record_param_comms", start, start + issue_us, tid, **fields)
    w.annotation(annotation, start + 2.0, start + issue_us - 2.0, tid)
    call = start + issue_us - 12.0
    return w.launch(kernel, call, dur, stream=stream, tid=tid, gpu_args=fields)


def loader_frames(w: Writer, start: float, end: float, *, workers: bool) -> None:
    """The Python frames of a DataLoader `__next__` (single process: fetch and collate on
    this thread; workers: wait on the result queue)."""
    w.frame("torch/utils/data/dataloader.py(631): __next__", start, end)
    if workers:
        w.frame("torch/utils/data/dataloader.py(1327): _next_data", start + 1.0, end - 1.0)
        w.frame("torch/utils/data/dataloader.py(1283): _get_data", start + 2.0, end - 2.0)
        w.frame("multiprocessing/queues.py(113): get", start + 3.0, end - 3.0)
        return
    w.frame("torch/utils/data/dataloader.py(675): _next_data", start + 1.0, end - 1.0)
    w.frame("torch/utils/data/_utils/fetch.py(49): fetch", start + 2.0, end - 2.0)
    w.frame("data.py(41): __getitem__", start + 3.0, end - 80.0)
    w.op("aten::stack", end - 60.0, end - 10.0)
