"""Kernel names read alone (analyzers/perf/kernel_precision.py, docs/perf-models.md#kernel-names).

The names are real: taken from the shared traces (H100, B200, MI210, MI300, the DLRM ranks on
V100) by a short script over their `kernel` events, cut where a long tail adds nothing; the
few not in any shared trace (`ampere_sgemm`, `h884`, `hcudnn`, Tensile `SB`/`HHS`, naive_conv)
are the libraries' documented spellings.
"""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.kernel_precision import kernel_library, kernel_vendor, read_kernel

# (name, precision, matrix units, vendor, library, matrix work)
NAMES = [
    # cuBLAS / cuDNN / CUTLASS
    ("volta_sgemm_128x32_nn", "fp32", False, "nvidia", "cuBLAS", True),
    ("ampere_sgemm_128x64_tn", "fp32", False, "nvidia", "cuBLAS", True),
    ("scudnn_128x64_relu_interior_nn_v1", "fp32", False, "nvidia", "cuDNN", True),
    ("hcudnn_128x128_relu_small_nn_v1", "fp16", False, "nvidia", "cuDNN", True),
    ("volta_h884gemm_64x64_ldg8_nn", "fp16", True, "nvidia", "cuBLAS", True),
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", "fp16", True, "nvidia", "cuBLAS", True),
    ("ampere_fp16_s16816gemm_fp16_128x64_ldg8_f2f_nn", "fp16", True, "nvidia", "cuBLAS", True),
    (
        "void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>"
        "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, unsigned "
        "long long, int, float, float, int, float const*, float const*, bool, int, int)",
        "fp32", False, "nvidia", "cuDNN", True,
    ),
    (
        "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>"
        "(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)",
        "fp32", False, "nvidia", "CUTLASS", True,
    ),
    (
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8>"
        "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)",
        "bf16", True, "nvidia", "CUTLASS", True,
    ),
    ("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4", "tf32", True, "nvidia", "CUTLASS",
     True),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8",
     "tf32", True, "nvidia", "cuBLAS", True),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma",
     "fp32", False, "nvidia", "cuBLAS", True),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
     "segment_k_off_kernel__5x_cublas", "bf16", True, "nvidia", "cuBLAS", True),
    ("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32",
     "fp16", True, "nvidia", "cuBLAS", True),
    ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", "unknown", True, "nvidia", "cuBLAS", True),
    ("bmm_E4m3_E4m3E4m3_Fp32_t128x8x128u2_s6_et64x8_m64x8x32_cga1x1x1_16dp256b_TN_transOut",
     "fp8", True, "unknown", None, True),
    (
        "void cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, __nv_bfloat16, float, "
        "__nv_bfloat16, true, true, false>(cublasLt::cublasSplitKParams<float>, __nv_bfloat16 "
        "const*)",
        "bf16", None, "nvidia", "cuBLAS", False,
    ),
    (
        "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>"
        "(cublasSplitKParams<float>, float const*, float const*, float*)",
        "fp32", None, "nvidia", "cuBLAS", False,
    ),
    (
        "void gemmSN_NN_kernel<float, 256, 4, 2, 8, 4, 4, false, cublasGemvTensorStridedBatched"
        "<float const>, cublasGemvTensorStridedBatched<float const>>(cublasGemvParams)",
        "fp32", False, "nvidia", "cuBLAS", True,
    ),
    (
        "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, __nv_bfloat16, float, "
        "128, 16, 4, 4, false, false, cublasGemvParamsEx<int>>(float, float)",
        "bf16", False, "nvidia", "cuBLAS", False,  # a GEMV: bandwidth, no matrix units
    ),
    (
        "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, "
        "128, 4, false, false, cutlass::bfloat16_t>>(pytorch_flash::Flash_fwd_params)",
        "bf16", True, "nvidia", "FlashAttention", True,
    ),
    # AMD hipBLASLt (TensileLite's UserArgs kernels), rocBLAS's Tensile, MIOpen, CK
    ("Cijk_Ailk_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT64x32x64_MI16x16x1_SN_LDSB0_AFC1",
     "bf16", True, "amd", "hipBLASLt", True),
    ("Cijk_Ailk_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x256x32_MI16x16x1_SN_LDSB1",
     "bf16", True, "amd", "hipBLASLt", True),
    ("Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB1_AFC1",
     "fp32", True, "amd", "hipBLASLt", True),
    ("Cijk_Ailk_Bljk_SB_MT128x128x8_SE_K1", "fp32", False, "amd", "Tensile", True),  # VALU
    ("Cijk_Ailk_Bljk_BBS_BH_MT32x32x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1",
     "bf16", True, "amd", "Tensile", True),
    ("Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0", "fp16", True, "amd", "Tensile",
     True),
    ("Cijk_Ailk_Bljk_HB_MT64x64x16_SE_K1", "fp16", False, "amd", "Tensile", True),
    ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64",
     "bf16", True, "amd", "MIOpen", True),
    ("naive_conv_fwd_nchw_float_double_float", "fp32", False, "amd", "MIOpen", True),
    ("naive_conv_packed_bwd_nhwc_bfloat16_double_bfloat16", "bf16", False, "amd", "MIOpen", True),
    ("_ZN2ck16tensor_operation6device12_GLOBAL__N_139kernel_grouped_conv_fwd_xdl_cshuffle_v3",
     "unknown", True, "amd", None, True),
    ("wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>", "bf16", None, "amd", "rocBLAS",
     False),
    # templated PyTorch kernels
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
     "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
     "fp32", None, "unknown", "PyTorch Native", False),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
     "launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail"
     "::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::"
     "{lambda(float)#1}, std::array<char*, 2ul> >", "fp32", None, "unknown", "PyTorch Native",
     False),
    ("void at::native::batch_norm_backward_kernel<c10::BFloat16, c10::BFloat16, float, int>"
     "(at::GenericPackedTensorAccessor<c10::BFloat16 const, 3ul>)", "bf16", None, "unknown",
     "PyTorch Native", False),
    ("void (anonymous namespace)::softmax_warp_forward<c10::Half, c10::Half, float, 8, false, "
     "false>(c10::Half*, c10::Half const*, int, int, int, bool const*, int, bool)", "fp16", None,
     "unknown", None, False),
    ("void at::native::(anonymous namespace)::unrolled_elementwise_kernel_for_multi_outputs<3, "
     "at::native::(anonymous namespace)::batch_norm_update<double>>", "fp64", None, "unknown",
     "PyTorch Native", False),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<long>,"
     " std::array<char*, 2ul> >", "unknown", None, "unknown", "PyTorch Native", False),
    # Triton: a fused kernel's name lists the ops it fused, not matrix work
    ("triton_poi_fused__unsafe_view_add_addmm_clone_convolution_mul_native_layer_norm_slice_0",
     "unknown", None, "unknown", "Triton", False),
    # neither vendor's library, nor matrix work
    ("SubTensorOpWithScalar1d", "unknown", None, "unknown", None, False),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "int8", None, "unknown", None, False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "precision", "units", "vendor", "library", "work"), NAMES)
def test_a_kernel_name_says_its_precision_units_vendor_and_library(
    name: str, precision: str, units: bool | None, vendor: str, library: str | None, work: bool
) -> None:
    read = read_kernel(name)
    assert (read.precision, read.matrix_units, read.vendor) == (precision, units, vendor), name
    assert (read.library, read.matrix_work) == (library, work), name


@pytest.mark.parametrize(
    "name",
    [
        "void cublasLt::splitKreduce_kernel<32, 16, int, __nv_bfloat16, float>()",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2>",
        "ampere_sgemm_64x32_sliced1x4_nn",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64",
    ],
)
def test_an_nvidia_kernel_never_reads_as_an_amd_library(name: str) -> None:
    assert kernel_vendor(name) == "nvidia"
    assert kernel_library(name) in ("cuBLAS", "CUTLASS")


@pytest.mark.parametrize("bad", ["", None, 3, "<", "void f<>()", "(((("])
def test_bad_input_reads_unknown(bad) -> None:
    read = read_kernel(bad)
    assert read.precision == "unknown" and read.library is None
