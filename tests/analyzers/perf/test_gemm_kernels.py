"""GEMM operand layout read from kernel names (§6.4)."""

import pytest

from rooflens.analyzers.perf.gemm_kernels import gemm_transpose


@pytest.mark.parametrize(
    ("kernel", "layout"),
    [
        ("Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT128x224x64", (True, False)),
        ("Cijk_Ailk_Bljk_BBS_BH_Bias_HAS_SAV_UserArgs_MT16x16x256", (False, False)),
        ("Cijk_Ailk_Bjlk_BBS_BH_Bias_HAS_SAV_UserArgs_MT64x32x64", (False, True)),
        ("nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", (True, False)),
        ("nvjet_tst_128x8_64x12_4x1_v_bz_NTN", (False, True)),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", None),
        ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16>", None),
    ],
)
def test_layout_is_read_only_from_names_that_spell_it(kernel: str, layout) -> None:
    assert gemm_transpose(kernel) == layout
