"""The GPU idle split on shared traces: its parts add up to the timeline's idle time
(tests/analyzers/trace/test_idle_causes.py holds the planted answers)."""

from __future__ import annotations

import pytest

from rooflens.analyzers.trace.idle_causes import idle_causes
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.idle_checks import assert_parts_sum_to_timeline_idle

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

SHARED_TRACES = (
    "mi300/resnet_act_checkpoint.json.gz",
    "h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    "b200/eager_trace.json.gz",
    "inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
    "mi210/gpu_only_trace/gpu_only_trace.json.gz",
)


@pytest.mark.parametrize("name", SHARED_TRACES)
def test_parts_add_up_to_the_timeline_idle_on_shared_traces(shared, name):
    model = build_model(load_trace(shared / "traces" / name))
    result = idle_causes(model)
    assert_parts_sum_to_timeline_idle(model, result)
    charged = sum(s.idle_ms for s in result.call_sites)
    assert charged <= result.part("sync").idle_ms + 1e-9
    if result.host_recorded:  # named causes hold at least 90 % of the idle
        assert result.part("unexplained").idle_ms <= 0.1 * result.idle_ms + 1e-9


def test_owlv2_top_call_site_is_the_box_predictor_copy(shared):
    path = shared / "traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz"
    top = idle_causes(build_model(load_trace(path))).call_sites[0]
    assert (top.call, top.operator, top.module) == (
        "cudaStreamSynchronize",
        "aten::to",
        "Owlv2ForObjectDetection",
    )
    assert top.frame.endswith("modeling_owlv2.py(1421): box_predictor")
