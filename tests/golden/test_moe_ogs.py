"""vLLM gpt-oss on MI300X (MXFP4 MoE through triton_kernels.matmul_ogs), graph replays merged
with their capture traces: every `_matmul_ogs_*` kernel gets a pseudo op scored from the
shapes the capture trace records (numbers read from the traces, FLOPs counted by hand).

Roofline coverage (share of kernel time on rows with a Pct Roofline) measured when the pseudo
ops landed: decode 0.185 -> 0.909, prefill+decode (piecewise, batch 8192) 0.141 -> 0.959.
"""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import roofline_coverage
from rooflens.analyzers.trace.capture_folder import default_capture_folder, load_captures
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.pseudo import MOE_OGS_DOWN, MOE_OGS_UP

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

CASES = {
    # trace folder: (coverage floor, tokens, up GFLOPS, down GFLOPS)
    # 2 * (32 * 4) * 3072 * 5888 and 2 * (32 * 4) * 2944 * 3072
    "vllm_decode_full": (0.88, 32, 4.630511616, 2.315255808),
    # 2 * (8192 * 4) * 3072 * 5888 and 2 * (8192 * 4) * 2944 * 3072
    "vllm_prefilldecode_piecewise": (0.93, 8192, 1185.410973696, 592.705486848),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, shared):
    path = shared / "traces" / "inference" / request.param / "graph_execution.json.gz"
    model = build_model(
        load_trace(path),
        captures=load_captures(default_capture_folder(path)),
        capture_folder="capture_traces",
    )
    return request.param, model, build_report(model, get_platform("MI300X"))


def test_roofline_coverage_rises_with_the_moe_gemms(case):
    name, _, report = case
    assert roofline_coverage(report) > CASES[name][0]


def test_every_layer_gets_an_up_and_a_down_projection(case):
    name, model, report = case
    _, tokens, up_gflops, down_gflops = CASES[name]
    inst = report.unified.instances
    for op, gflops, k_dim in ((MOE_OGS_UP, up_gflops, 3072), (MOE_OGS_DOWN, down_gflops, 2944)):
        rows = inst[inst["name"] == op]
        assert len(rows) == 24  # gpt-oss-20b: 24 MoE layers
        assert (rows["GFLOPS"] == gflops).all()
        assert (rows["Compute Spec"] == "matrix_bf16").all()
        assert (rows["op category"] == "MoE_unfused").all()
        assert np.isfinite(rows["Pct Roofline"].to_numpy(dtype=float)).all()
        params = rows["perf_params"].iloc[0]
        assert (params["tokens"], params["topk"], params["K"]) == (tokens, 4, k_dim)
        assert (params["experts"], params["active_experts"]) == (32, 32)
    # every matmul_ogs kernel of the replay is owned by a pseudo op
    gpu = model.gpu
    ogs = gpu.index[gpu["name"].astype(str).str.startswith("_matmul_ogs_")]
    assert len(ogs) == 48
    assert set(model.names[model.launcher[ogs]]) == {MOE_OGS_UP, MOE_OGS_DOWN}
