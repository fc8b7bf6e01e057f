"""Operators that launch other operators' kernels under one name (a torch.compile region, a
graph replay) are categorised by their first kernel, as a GPU-only trace's kernels are: the
matrix multiplies a `CompiledFunction` launches directly are GEMM time, not "other"."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.perf.categories import CategoryFileError, default_table, load_table
from rooflens.analyzers.perf.kernel_precision import kernel_library
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.loading import read_trace
from rooflens.analyzers.synthetic.devices import H100
from rooflens.analyzers.synthetic.writer import Writer

SGEMM = "ampere_sgemm_128x64_tn"
CUTLASS = "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"
TRITON = "triton_poi_fused_add_mul_0"


@pytest.mark.parametrize(
    ("op", "kernel", "category"),
    [
        ("CompiledFunction", SGEMM, "GEMM"),
        ("CompiledFunction", CUTLASS, "GEMM"),
        ("CompiledFunctionBackward", TRITON, "triton"),
        ("cudaGraphLaunch", SGEMM, "GEMM"),
        ("CompiledFunction", None, "other"),  # no kernel: nothing to read
        ("my_custom_op", SGEMM, "other"),  # not a launcher of others' work: its own name rules
    ],
)
def test_an_opaque_launcher_takes_its_first_kernel_s_category(op, kernel, category) -> None:
    assert default_table().category(op, kernel) == category


# one real kernel name per GEMM library (shared traces, or the library's documented spelling)
GEMM_KERNELS = [
    ("cuBLAS", "ampere_sgemm_128x64_tn"),
    ("cuBLAS", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"),
    ("cuBLAS", "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"),
    (
        "CUTLASS",
        "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn>",
    ),
    ("Tensile", "Cijk_Ailk_Bljk_BBS_BH_MT32x32x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0_ACED0"),
    ("hipBLASLt", "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x160x64_MI16x16x1_SN_LDSB1"),
    ("rocBLAS", "wvSplitK_hf_sml_<__hip_bfloat16, 64, 2, 16, 8, 2, 1>"),
]


@pytest.mark.parametrize(("library", "kernel"), GEMM_KERNELS)
def test_every_gemm_library_s_kernel_is_gemm_time_under_a_compiled_region(library, kernel) -> None:
    assert default_table().category("CompiledFunction", kernel) == "GEMM"
    assert kernel_library(kernel) == library


@pytest.mark.parametrize(
    ("kernel", "category"),
    [
        ("triton_poi_fused_add_mul_0", "triton"),
        ("triton_tem_fused_mm_0", "triton"),  # a Triton template matmul is Triton's own work
        ("void at::native::vectorized_elementwise_kernel<4>", "elementwise"),
    ],
)
def test_non_library_kernels_keep_their_category(kernel, category) -> None:
    assert default_table().category("CompiledFunction", kernel) == category


@pytest.mark.parametrize(
    "kernel",
    [
        # NVIDIA kernels whose names contain words an AMD library pattern could catch
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float>",
        "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4",
        "ampere_sgemm_128x64_tn",
    ],
)
def test_no_amd_library_is_named_for_an_nvidia_kernel(kernel) -> None:
    assert kernel_library(kernel) in {"cuBLAS", "CUTLASS"}


@pytest.mark.parametrize(
    "kernel",
    [
        "Cijk_Ailk_Bljk_BBS_BH_MT32x32x64_MI16x16x16x1_SN_1LDSB0_APM1",
        "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x160x64_MI16x16x1_SN_LDSB1",
    ],
)
def test_no_nvidia_library_is_named_for_an_amd_kernel(kernel) -> None:
    assert kernel_library(kernel) in {"Tensile", "hipBLASLt", "CK"}


def test_the_unified_table_puts_a_compiled_region_s_gemm_under_gemm(tmp_path: Path) -> None:
    w = Writer(device=H100, host_pid=11, main_tid=11)
    w.launching_op("CompiledFunction", SGEMM, 1_000.0, 400.0)
    w.launching_op("aten::relu", "void at::native::vectorized_elementwise_kernel<4>", 1_100.0, 5.0)
    model, _ = read_trace(w.write(tmp_path / "compiled.json.gz", "compiled"))
    unified = build_report(model, None).unified
    assert unified is not None
    table = unified.instances.set_index("name")
    assert table.loc["CompiledFunction", "op category"] == "GEMM"


def test_a_user_table_adds_opaque_launchers(tmp_path: Path) -> None:
    extra = tmp_path / "extra.toml"
    extra.write_text('[[opaque_launchers]]\nregex = "^my_region$"\n')
    assert load_table(extra).category("my_region", SGEMM) == "GEMM"
    extra.write_text('[[opaque_launchers]]\nregex = "("\n')
    with pytest.raises(CategoryFileError, match="opaque_launchers"):
        load_table(extra)
