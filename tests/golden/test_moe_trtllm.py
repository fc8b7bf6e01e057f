"""vLLM gpt-oss on B200 (MXFP4 MoE through flashinfer `trtllm_fp4_block_scale_moe`), eager:
every MoE GEMM, finalize and mxfp8-quantize kernel gets a pseudo op scored from the sizes
the trace records (numbers read from the trace, FLOPs and bytes counted by hand in
tests/analyzers/perf/test_moe_trtllm.py).

Roofline coverage (share of attributed kernel time on rows with a Pct Roofline, platform
file reference/tracelens/platforms/B200.json) measured when the pseudo ops landed:
0.295 -> 0.884. What is left of `vllm::moe_forward` is its three routing kernels (4.6 %).
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.perf.platforms import load_platform_file
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.pseudo_trtllm import FINALIZE, GEMM1, GEMM2, MXFP8_QUANTIZE

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

MIB = 2**20
ROWS = {
    # op: (GFLOPS, bytes, compute spec, category)
    GEMM1: (2 * 3552 * 3072 * 1024 / 1e9, 218_598_144, "matrix_fp8", "MoE_unfused"),
    GEMM2: (2 * 3552 * 512 * 3072 / 1e9, 130_653_696, "matrix_fp8", "MoE_unfused"),
    FINALIZE: (7 * 888 * 3072 / 1e9, 27_300_672, "vector_bf16", "MoE_aux"),
    MXFP8_QUANTIZE: (4 * 888 * 3072 / 1e9, 8_269_056, "vector_bf16", "MoE_aux"),
}


@pytest.fixture(scope="module")
def b200(shared):
    model = build_model(load_trace(shared / "traces" / "b200" / "eager_trace.json.gz"))
    platform = load_platform_file(shared / "reference/tracelens/platforms/B200.json")
    return model, build_report(model, platform)


def test_roofline_coverage_rises_with_the_moe_kernels(b200):
    _, report = b200
    assert roofline_coverage(report) > 0.87  # 0.295 before


def test_every_layer_gets_its_four_pseudo_ops(b200):
    model, report = b200
    inst = report.unified.instances
    for op, (gflops, nbytes, spec, category) in ROWS.items():
        rows = inst[inst["name"] == op]
        assert len(rows) == 36, op  # 36 MoE layers in the trace
        assert (rows["GFLOPS"] == gflops).all(), op
        assert (rows["Data Moved (MB)"] == nbytes / MIB).all(), op
        assert (rows["Compute Spec"] == spec).all(), op
        assert (rows["op category"] == category).all(), op
        assert np.isfinite(rows["Pct Roofline"].to_numpy(dtype=float)).all(), op
    params = inst.loc[inst["name"] == GEMM1, "perf_params"].iloc[0]
    assert (params["tokens"], params["topk"], params["experts"]) == (888, 4, 128)
    assert (params["K"], params["N"], params["N_out"], params["padded_rows"]) == (
        3072,
        1024,
        512,
        5472,
    )
    # every bmm kernel is owned by a GEMM pseudo op
    gpu = model.gpu
    bmm = gpu.index[gpu["name"].astype(str).str.startswith("bmm_")]
    assert len(bmm) == 72
    assert set(model.names[model.launcher[bmm]]) == {GEMM1, GEMM2}
