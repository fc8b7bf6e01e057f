"""Short kernel names (analyzers/perf/kernel_names.py) on kernel names as the shared traces
record them (MI210 GPU-only, MI300 and H100 eager traces, vLLM and B200 inference)."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.kernel_names import LIMIT, short_kernel_name

BN_ACCESSOR = "at::GenericPackedTensorAccessor<c10::BFloat16 const, 3ul, at::DefaultPtrTraits, int>"
CLAMP = (
    "at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
    "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
    "const::{lambda()#9}::operator()() const::{lambda(c10::BFloat16)#1}"
)
THRESHOLD = (
    "at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, c10::BFloat16, "
    "at::native::(anonymous namespace)::threshold_kernel_impl<c10::BFloat16>"
    "(at::TensorIteratorBase&, c10::BFloat16, c10::BFloat16)::{lambda(c10::BFloat16, "
    "c10::BFloat16)#1}>"
)
REAL = {
    "void at::native::batch_norm_backward_kernel<c10::BFloat16, c10::BFloat16, float, int>"
    f"({BN_ACCESSOR}, {BN_ACCESSOR}, bool, float)": "batch_norm_backward_kernel<bf16>",
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>,"
    " std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "std::array<char*, 3ul>)": "vectorized_elementwise_kernel<add, bf16>",
    f"void at::native::vectorized_elementwise_kernel<8, {CLAMP}, std::array<char*, 2ul> >"
    f"(int, {CLAMP}, std::array<char*, 2ul>)": "vectorized_elementwise_kernel<clamp_scalar, bf16>",
    f"void at::native::vectorized_elementwise_kernel<8, {THRESHOLD}, std::array<char*, 3ul> >"
    f"(int, {THRESHOLD}, std::array<char*, 3ul>)": "vectorized_elementwise_kernel<threshold, bf16>",
    "void at::native::(anonymous namespace)::max_pool_backward_nchw<c10::BFloat16, float>("
    "c10::BFloat16 const*, long const*, int, long, long, long, int, int, c10::BFloat16*)": (
        "max_pool_backward_nchw<bf16>"
    ),
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<"
    "float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, "
    "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)": (
        "reduce_kernel<mean, fp32>"
    ),
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<int, at::native::ArgMaxOps<int>,"
    " unsigned int, long, 4> >(at::native::ReduceOp<int, at::native::ArgMaxOps<int>, unsigned "
    "int, long, 4>)": "reduce_kernel<arg_max, int32>",
    "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, "
    "float, int, int)": "rms_norm_kernel<bf16>",
    "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)": "ncclDevKernel_Generic",
    "triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0": (
        "triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0"
    ),
}


@pytest.mark.parametrize(("name", "short"), list(REAL.items()))
def test_function_operation_and_dtype(name: str, short: str) -> None:
    assert short_kernel_name(name) == short


@pytest.mark.parametrize(
    "name",
    [
        "Cijk_Alik_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT32x32x64_MI16x16x1_SN_LDSB0_AFC1_AFEM1_"
        "AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA90a",
        "igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt256x128x16_wt32x32x8_ws2x1_wr2x2_ta1x4x1x4_1x4x1x64_"
        "tb1x4x1x2_1x4x1x64_gkgs",
        "_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47Gridwise",
    ],
)
def test_library_names_kept_whole_but_capped(name: str) -> None:
    short = short_kernel_name(name)
    assert len(short) <= LIMIT
    assert short == name if len(name) <= LIMIT else short == name[: LIMIT - 1] + "…"


@pytest.mark.parametrize(
    "name", ["", "aten::mm", "void ", "void <>", "f<<<", "void a::b<c10::Half", "(x)", "x)>("]
)
def test_odd_names_never_raise(name: str) -> None:
    short = short_kernel_name(name)
    assert isinstance(short, str) and len(short) <= LIMIT


def test_operator_names_unchanged() -> None:
    assert short_kernel_name("aten::convolution_backward") == "aten::convolution_backward"
    assert short_kernel_name("void a::b<c10::Half") == "b<fp16>"  # a cut name keeps its dtype
