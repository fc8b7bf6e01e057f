"""The sample trace: loads, links fully, fills every timeline bucket, deterministic by seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model


def test_sample_trace_is_complete_and_fully_linked(tmp_path: Path) -> None:
    path = write_sample_trace(tmp_path / "sample.json.gz")
    trace = load_trace(path)
    assert 200 <= len(trace.events) <= 600
    model = build_model(trace)
    health = assess(model)
    assert health.gpu.model == "AMD Instinct MI300X"
    assert health.linking.gpu_events > 0
    assert health.linking.unlinked == 0
    assert health.shapes_recorded and health.module_names_recorded
    assert health.profiler_steps == [1]
    assert health.distributed.collective_kernels == 1
    assert not [w for w in health.warnings if w.severity != "info"]
    rows = {r["type"]: r["time ms"] for r in model.gpu_timeline().pooled.rows()}
    for bucket in ("computation_time", "exposed_comm_time", "exposed_memcpy_time", "idle_time"):
        assert rows[bucket] > 0, bucket
    names = set(trace.events["name"].astype(str))
    assert {"aten::addmm", "aten::mm", "aten::_scaled_dot_product_flash_attention"} <= names
    assert {"aten::layer_norm", "aten::copy_", "record_param_comms", "attn_fwd"} <= names


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = write_sample_trace(tmp_path / "a.json.gz", seed=3).read_bytes()
    b = write_sample_trace(tmp_path / "b.json.gz", seed=3).read_bytes()
    c = write_sample_trace(tmp_path / "c.json.gz", seed=4).read_bytes()
    assert a == b
    assert a != c


def test_layers_and_mlp_modules_are_planted_and_the_defaults_unchanged(tmp_path: Path) -> None:
    default = write_sample_trace(tmp_path / "a.json.gz").read_bytes()
    explicit = write_sample_trace(tmp_path / "b.json.gz", layers=2, mlp_module=False)
    assert explicit.read_bytes() == default
    trace = load_trace(write_sample_trace(tmp_path / "c.json.gz", layers=3, mlp_module=True))
    names = trace.events["name"].astype(str)
    assert sorted(set(names[names.str.startswith("nn.Module: MLP_")])) == [
        f"nn.Module: MLP_{n}" for n in range(3)
    ]
    assert (names == "nn.Module: TransformerBlock_2").sum() == 1
    assert (names == "aten::_scaled_dot_product_flash_attention").sum() == 3
    with pytest.raises(ValueError, match="at least one layer"):
        write_sample_trace(tmp_path / "d.json.gz", layers=0)
