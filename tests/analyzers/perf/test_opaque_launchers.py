"""Operators that launch other operators' kernels under one name (a torch.compile region, a
graph replay) are categorised by their first kernel, as a GPU-only trace's kernels are: the
matrix multiplies a `CompiledFunction` launches directly are GEMM time, not "other"."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.perf.categories import CategoryFileError, default_table, load_table
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
