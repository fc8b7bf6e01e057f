"""Every shared trace loads and inspects; the non-trace JSON beside them is refused clearly."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import inspect_trace
from tests.helpers.golden import shared_traces, trace_id, when_shared

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

TRACES = shared_traces()
OTHER_JSON = shared_traces("execution_details.json")


@pytest.mark.parametrize("path", when_shared(TRACES), ids=trace_id)
def test_trace_loads_and_inspects(shared: Path, path: Path) -> None:
    result = inspect_trace(path)
    health = result.health
    assert health.events > 0
    assert result.gpu_timeline[0].type == "computation_time"
    timeline = {r.type: r.time_ms for r in result.gpu_timeline}
    if health.linking.linked:
        total = timeline["total_time"]
        parts = (
            timeline["computation_time"]
            + timeline["exposed_comm_time"]
            + timeline["exposed_memcpy_time"]
            + timeline["idle_time"]
        )
        assert parts == pytest.approx(total, rel=1e-9, abs=1e-9)
        assert len(result.per_device) == len(health.devices_with_gpu_events)


def test_every_shared_trace_is_covered(shared: Path) -> None:
    assert len(TRACES) >= 25


@pytest.mark.parametrize("path", when_shared(OTHER_JSON), ids=trace_id)
def test_json_that_is_not_a_trace_is_refused(shared: Path, path: Path) -> None:
    with pytest.raises(TraceError, match="not a Chrome trace"):
        inspect_trace(path)


def test_gpu_only_mi210_trace_gets_a_timeline_and_a_warning(shared: Path) -> None:
    result = inspect_trace(shared / "traces/mi210/gpu_only_trace/gpu_only_trace.json.gz")
    timeline = {r.type: r.time_ms for r in result.gpu_timeline}
    assert timeline["computation_time"] == pytest.approx(5.3433701171875, abs=1e-6)
    assert timeline["total_time"] == pytest.approx(5.9795029296875, abs=1e-6)
    assert result.health.gpu.model == "AMD Instinct MI210"
    assert result.health.gpu.suggested_platform == "MI210"
    assert "gpu_only" in {w.code for w in result.health.warnings}


def test_vllm_trace_with_unnamed_devices_suggests_mi300x(shared: Path) -> None:
    result = inspect_trace(shared / "traces/inference/vllm_decode_full/graph_execution.json.gz")
    assert result.health.gpu.suggested_platform == "MI300X"
    assert result.health.execution == "mixed"
    assert result.health.graph_launches == 1


def test_h100_trace_counts_unlinked_kernels_and_says_why(shared: Path) -> None:
    result = inspect_trace(shared / "traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    health = result.health
    assert (health.linking.gpu_events, health.linking.linked) == (1707, 1198)
    assert health.gpu.suggested_platform == "H100_SXM"
    assert health.profiler_steps == [6]
    warning = next(w for w in health.warnings if w.code == "unlinked_gpu_events")
    assert "509 GPU events" in warning.message


def test_secret_bearing_metadata_never_reaches_the_output(shared: Path) -> None:
    """The H100 traces carry `metadata.env`-style blocks; nothing of it may be echoed."""
    path = shared / "traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
    metadata = json.loads(gzip.decompress(path.read_bytes()))["metadata"]
    token = re.search(r"HF_TOKEN\W+(\w{8,})", json.dumps(metadata))
    assert token, "the fixture is expected to hold a token"
    text = inspect_trace(path).model_dump_json()
    for marker in ("started_by", "base_image", "__ignore_me", "HF_TOKEN", token.group(1)):
        assert marker not in text
