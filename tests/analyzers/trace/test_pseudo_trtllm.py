"""Pseudo ops above flashinfer trtllm-gen MoE kernels (perf_report.md §2.9), hand-written traces.

Layout as vLLM's gpt-oss MoE records it on B200: under `vllm::moe_forward`, the Python frame
`flashinfer/fp8_quantization.py(145): mxfp8_quantize` allocates the fp8 copy and its scales
and launches the quantize kernel; then `flashinfer/fused_moe/core.py(1633):
trtllm_fp4_block_scale_moe_op` allocates top-k ids/weights, the output, the routing buffers
and both GEMM outputs, launches the routing kernels (cudaLaunchKernelExC), the two `bmm_*`
GEMMs (cuLaunchKernelEx, a driver call) and the finalize kernel.
"""

from __future__ import annotations

import json

import numpy as np

from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.trace.pseudo import insert_pseudo_ops
from rooflens.analyzers.trace.pseudo_trtllm import FINALIZE, GEMM1, GEMM2, MXFP8_QUANTIZE

BF16 = "c10::BFloat16"
GEMM1_KERNEL = "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_rM_TN_transOut_clmp_swiGlu_sm100f"
GEMM2_KERNEL = "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_rM_TN_transOut_clmp_sm100f"
ROUTING = "void moe::dev::routing::routingIndicesHistogramKernel<Params>(Params)"
FINAL_KERNEL = "void moe::dev::finalize::finalizeKernelVecLoad<Params>(Params)"
QUANT_KERNEL = "void tensorrt_llm::kernels::quantize_with_block_size<2, __nv_bfloat16, 32>(int)"
MOE_FRAME = "flashinfer/fused_moe/core.py(1633): trtllm_fp4_block_scale_moe_op"
QUANT_FRAME = "flashinfer/fp8_quantization.py(145): mxfp8_quantize"


def empty(tb, ts, shape, code):
    """`<built-in method empty>` -> aten::empty(size, dtype), as the profiler records it."""
    return [
        tb.python_function("<built-in method empty of type object at 0x7f>", ts, 4),
        tb.cpu_op(
            "aten::empty",
            ts + 1,
            2,
            args={
                "Input Dims": [[], [], [], [], [], []],
                "Input type": ["ScalarList", "Scalar", "", "", "Scalar", ""],
                "Concrete Inputs": [json.dumps(shape), str(code), "", "", "", ""],
            },
        ),
    ]


def launch(tb, ts, kernel, n, grid, driver=False):
    name, cat = (
        ("cuLaunchKernelEx", "cuda_driver") if driver else ("cudaLaunchKernelExC", "cuda_runtime")
    )
    events = [tb.runtime(name, ts, 3, correlation=n, cat=cat)]
    events += [tb.flow("s", n, 1, 1, ts), tb.flow("f", n, 0, 7, 5000 + 100 * n)]
    args = {"grid": grid} if grid else {}
    return [*events, tb.kernel(kernel, 5000 + 100 * n, 50, correlation=n, args=args)]


def moe_events(tb, routed=True, grids=True):
    g1, g2 = ([8, 342, 1], [24, 342, 1]) if grids else (None, None)
    return [
        tb.cpu_op(
            "vllm::moe_forward",
            0,
            1000,
            args={"Input Dims": [[888, 3072], [888, 128], []], "Input type": [BF16, BF16, ""]},
        ),
        tb.python_function(QUANT_FRAME, 10, 90),
        *empty(tb, 20, [888, 3072], 24),
        *empty(tb, 30, [85248], 0),
        *launch(tb, 40, QUANT_KERNEL, 1, [740, 1, 1]),
        tb.python_function(MOE_FRAME, 200, 700),
        *empty(tb, 210, [888, 4], 3),
        *empty(tb, 220, [888, 4], 15),
        *empty(tb, 230, [888, 3072], 15),
        *empty(tb, 240, [128], 3),
        *(empty(tb, 250, [3552], 3) if routed else []),
        *empty(tb, 260, [5472], 3),
        *launch(tb, 300, ROUTING, 2, [4, 1, 1]),
        *empty(tb, 400, [5472, 512], 0),
        *empty(tb, 410, [88064], 0),
        *empty(tb, 420, [5472, 3072], 15),
        *launch(tb, 500, GEMM1_KERNEL, 3, g1, driver=True),
        *launch(tb, 600, GEMM2_KERNEL, 4, g2, driver=True),
        *launch(tb, 700, FINAL_KERNEL, 5, [888, 1, 1]),
    ]


def kernel_owner(model, kernel):
    gpu = model.gpu
    uid = gpu.index[gpu["name"].astype(str) == kernel][0]
    return str(model.names[model.launcher[uid]])


def test_each_kernel_gets_a_pseudo_op_with_the_recorded_shapes(tb):
    model = tb.model(moe_events(tb))
    added = model.events.iloc[model.recorded_events :].set_index("name")
    assert sorted(added.index.astype(str)) == sorted([GEMM1, GEMM2, FINALIZE, MXFP8_QUANTIZE])
    gemm_dims = [[888, 3072], [888, 128], [888, 4], [3552], [5472, 512], [5472, 3072], [], []]
    for op, grid, kernel in (
        (GEMM1, "[8,342,1]", GEMM1_KERNEL),
        (GEMM2, "[24,342,1]", GEMM2_KERNEL),
    ):
        row = added.loc[op]
        assert json.loads(row["input_dims"]) == gemm_dims
        types = [BF16, BF16, "int", "int", "unsigned char", BF16, "ScalarList", ""]
        assert json.loads(row["input_type"]) == types
        assert json.loads(row["concrete_inputs"]) == ["", "", "", "", "", "", grid, kernel]
    final = added.loc[FINALIZE]
    assert json.loads(final["input_dims"]) == [[5472, 3072], [888, 4], [3552], [888, 3072], []]
    assert json.loads(final["input_type"]) == [BF16, BF16, "int", BF16, ""]
    quant = added.loc[MXFP8_QUANTIZE]
    assert json.loads(quant["input_dims"]) == [[888, 3072], [888, 3072], [85248]]
    assert json.loads(quant["input_type"]) == [BF16, "c10::Float8_e4m3fn", "unsigned char"]
    # frame -> pseudo op -> launch -> kernel
    parent, names = model.tree.parent, model.names
    for pseudo in np.flatnonzero(np.char.startswith(names.astype(str), "pseudo_op::")):
        (child,) = np.flatnonzero(parent == pseudo)
        assert names[child] in ("cuLaunchKernelEx", "cudaLaunchKernelExC")
        assert names[parent[pseudo]] in (MOE_FRAME, QUANT_FRAME)
    assert kernel_owner(model, GEMM1_KERNEL) == GEMM1
    assert kernel_owner(model, GEMM2_KERNEL) == GEMM2
    assert kernel_owner(model, FINAL_KERNEL) == FINALIZE
    assert kernel_owner(model, QUANT_KERNEL) == MXFP8_QUANTIZE
    assert kernel_owner(model, ROUTING) == "vllm::moe_forward"  # no model of its own


def test_the_unified_table_scores_the_pseudo_ops(tb):
    model = tb.model(moe_events(tb))
    inst = build_report(model, get_platform("B200")).unified.instances.set_index("name")
    # 2·3552·3072·1024 and 2·3552·512·3072 (tests/analyzers/perf/test_moe_trtllm.py)
    assert inst.loc[GEMM1, "GFLOPS"] == 22.347251712
    assert inst.loc[GEMM2, "GFLOPS"] == 11.173625856
    assert inst.loc[GEMM1, "Compute Spec"] == "matrix_fp8"
    assert inst.loc[GEMM1, "op category"] == "MoE_unfused"
    assert inst.loc[FINALIZE, "op category"] == "MoE_aux"
    assert inst.loc[MXFP8_QUANTIZE, "GFLOPS"] == 4 * 888 * 3072 / 1e9
    assert np.isfinite(inst.loc[[GEMM1, GEMM2, FINALIZE, MXFP8_QUANTIZE], "Pct Roofline"]).all()
    assert f"vllm::moe_forward->{ROUTING} (Synthetic Op)" in inst.index


def test_the_stage_is_idempotent(tb):
    model = tb.model(moe_events(tb))
    again = insert_pseudo_ops(model.events, model.links.launch, model.tree.parent)
    assert again.inserted == 0 and again.events is model.events


def test_without_the_routed_allocation_the_moe_kernels_stay_with_the_op(tb):
    model = tb.model(moe_events(tb, routed=False))
    assert kernel_owner(model, GEMM1_KERNEL) == "vllm::moe_forward"
    assert kernel_owner(model, FINAL_KERNEL) == "vllm::moe_forward"
    assert kernel_owner(model, QUANT_KERNEL) == MXFP8_QUANTIZE  # its own facts are there


def test_without_kernel_grids_no_gemm_pseudo_op(tb):
    model = tb.model(moe_events(tb, grids=False))
    assert kernel_owner(model, GEMM1_KERNEL) == "vllm::moe_forward"
    assert kernel_owner(model, GEMM2_KERNEL) == "vllm::moe_forward"
