"""Generated traces load and inspect (the counterpart of golden/test_every_trace.py).

Each timeline row is held against the same quantity computed here from the raw events
(`GpuFacts`); the health figures against what the generator planted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import inspect_trace
from tests.helpers.sample_traces import (
    SECRET_MARKERS,
    GpuFacts,
    gpu_events,
    gpu_only,
    read_document,
    renamed_gpu,
    unlinked,
    with_secret_metadata,
    write_document,
    write_variant,
)

VARIANTS = {
    "sample": {},
    "one_layer_seed_1": {"layers": 1, "seed": 1},
    "three_layers_seed_2": {"layers": 3, "seed": 2},
    "eight_mlp_modules": {"layers": 8, "mlp_module": True},
}
US = 1e-6  # ms: the rows equal the raw sums to float rounding


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_generated_trace_loads_and_its_timeline_is_the_raw_events(tmp_path: Path, name: str):
    generator = VARIANTS[name]
    path = write_variant(tmp_path / f"{name}.json.gz", **generator)
    facts = GpuFacts.of(read_document(path))
    result = inspect_trace(path)
    health = result.health
    assert result.gpu_timeline[0].type == "computation_time"
    rows = {r.type: r.time_ms for r in result.gpu_timeline}
    assert rows["total_time"] == pytest.approx(facts.total_us / 1000, abs=US)
    assert rows["computation_time"] == pytest.approx(facts.computation_us / 1000, abs=US)
    assert rows["exposed_comm_time"] == pytest.approx(facts.exposed_comm_us / 1000, abs=US)
    assert rows["exposed_memcpy_time"] == pytest.approx(facts.exposed_copy_us / 1000, abs=US)
    assert rows["idle_time"] == pytest.approx(facts.idle_us / 1000, abs=US)
    parts = sum(
        rows[k]
        for k in ("computation_time", "exposed_comm_time", "exposed_memcpy_time", "idle_time")
    )
    assert parts == pytest.approx(rows["total_time"], rel=1e-9, abs=1e-9)
    expected = gpu_events(generator.get("layers", 2))
    assert (health.linking.gpu_events, health.linking.linked) == (expected, expected)
    assert len(result.per_device) == len(health.devices_with_gpu_events) == 1
    assert health.gpu.suggested_platform == "MI300X"


@pytest.mark.parametrize(
    "document",
    [
        {"batch_size": 32, "mode": "FULL"},  # an execution_details.json beside capture traces
        {"traceEvents": [{"name": "a"}, {"name": "b"}]},
    ],
    ids=["execution_details", "events_without_a_phase"],
)
def test_json_that_is_not_a_trace_is_refused(tmp_path: Path, document: dict) -> None:
    path = write_document(document, tmp_path / "execution_details.json")
    with pytest.raises(TraceError, match="not a Chrome trace"):
        inspect_trace(path)


def test_a_gpu_only_trace_gets_a_timeline_and_a_warning(tmp_path: Path) -> None:
    path = write_variant(tmp_path / "gpu_only.json.gz", gpu_only)
    facts = GpuFacts.of(read_document(path))
    result = inspect_trace(path)
    rows = {r.type: r.time_ms for r in result.gpu_timeline}
    assert rows["computation_time"] == pytest.approx(facts.computation_us / 1000, abs=US)
    assert rows["total_time"] == pytest.approx(facts.total_us / 1000, abs=US)
    assert result.health.gpu.model == "AMD Instinct MI300X"
    assert result.health.gpu.suggested_platform == "MI300X"
    assert "gpu_only" in {w.code for w in result.health.warnings}


@pytest.mark.parametrize(
    ("device", "platform"),
    [("NVIDIA H100 80GB HBM3", "H100_SXM"), ("AMD Instinct MI210", "MI210")],
)
def test_the_device_name_suggests_the_platform(tmp_path: Path, device: str, platform: str):
    path = write_variant(tmp_path / "renamed.json.gz", renamed_gpu(device))
    health = inspect_trace(path).health
    assert health.gpu.model == device
    assert health.gpu.suggested_platform == platform


def test_unlinked_kernels_are_counted_and_said(tmp_path: Path) -> None:
    path = write_variant(tmp_path / "unlinked.json.gz", unlinked(5))
    health = inspect_trace(path).health
    assert (health.linking.gpu_events, health.linking.linked) == (48, 43)
    warning = next(w for w in health.warnings if w.code == "unlinked_gpu_events")
    assert "5 GPU events" in warning.message


def test_secret_bearing_metadata_never_reaches_the_output(tmp_path: Path) -> None:
    path = write_variant(tmp_path / "secret.json.gz", with_secret_metadata)
    assert "HF_TOKEN" in json.dumps(read_document(path)["metadata"])
    text = inspect_trace(path).model_dump_json()
    for marker in SECRET_MARKERS:
        assert marker not in text
