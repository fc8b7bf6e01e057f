"""xDiT Flux capture trace: torch.compile records the transformer as one HIP graph and replays
it once in the same profile. As its own capture trace, every replayed kernel gets the
operator that captured it (numbers read from the trace)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from rooflens.analyzers.perf import registry
from rooflens.analyzers.report.unified import attribute_unified
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.own_capture import own_captures

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

TRACE = "traces/inference/xdit_flux.1/capture_traces/capture_trace_rank_0.json.gz"


@pytest.fixture(scope="module")
def merged(shared):
    trace = load_trace(shared / TRACE)
    captures = own_captures(trace, build_model(trace).tree.parent)
    return captures, build_model(trace, captures=captures)


def test_the_capture_window_is_found_in_the_trace_itself(merged):
    (capture,) = merged[0]
    assert (capture.file, capture.batch_size, capture.mode) == (
        "capture_trace_rank_0.json.gz",
        None,
        "FULL",
    )
    # 504 GEMM launches (hipExtModuleLaunchKernel) + 490 hipModuleLaunchKernel
    (window,) = capture.windows
    assert len(window.launches) == 994


def test_every_replayed_kernel_gets_its_capture_time_operator(merged):
    model = merged[1]
    # the one hipGraphLaunch replays 993 kernels: all but the window's last GEMM launch
    assert model.capture.graph_launches == 1
    assert model.capture.merged_launches == 1
    assert model.capture.merged_gpu_events == 993
    graph = np.flatnonzero(model.names == "hipGraphLaunch")
    gpu = model.gpu
    replayed = gpu[np.isin(gpu["launch"].to_numpy(), graph)].sort_values("ts")
    owners = Counter(model.names[model.launcher[replayed.index.to_numpy()]])
    assert owners["aten::mm"] == 427
    assert owners["aten::addmm"] == 76
    assert owners["aiter::fmha_v3_fwd"] == 57
    # the third replayed kernel is inductor's extern mm of the 256-wide time embedding
    third = replayed.index[2]
    op = model.launcher[third]
    assert model.names[third].startswith("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT16x16x256")
    assert model.names[op] == "aten::mm"
    assert model.events["input_dims"].iat[op] == "[[1,256],[256,3072],[1,3072]]"


def test_no_replayed_kernel_is_left_as_a_synthetic_op(merged):
    model = merged[1]
    unified = attribute_unified(model, registry.has_model, registry.has_backward)
    synthetic = np.flatnonzero(unified.ops["synthetic"].to_numpy())
    kernels = unified.kernels.loc[unified.kernels["op"].isin(synthetic), "gpu"].to_numpy()
    launches = model.names[model.links.launch[kernels]]
    assert "hipGraphLaunch" not in set(launches)
