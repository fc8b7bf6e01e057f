"""cpu_idle, multi_kernel and kernel_fusion on generated traces (the counterpart of golden
test_system_metrics.py and test_fusion.py): every number against its value computed here
from the raw events, or planted by the generator.

Planted: one HtoD copy of the int64 token batch, one all-reduce on its own stream (launched
after the backward pass, so part of it overlaps the last backward kernels), host pauses that
leave the GPU idle, and, with `mlp_module`, an `nn.Module: MLP_<n>` per block holding a
GEMM, a GELU and a GEMM: its GELU is a GEMM epilogue that fusion would remove.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from rooflens.analyzers.categories.cpu_idle import analyze_cpu_idle
from rooflens.analyzers.categories.kernel_fusion import analyze_kernel_fusion
from rooflens.analyzers.categories.multi_kernel import analyze_multi_kernel
from rooflens.analyzers.categories.system_inputs import SystemInputs, Timeline
from rooflens.analyzers.perf.platforms import get_platform
from rooflens.analyzers.prepare.category_data import prepare
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.synthetic.sample import ALL_REDUCE, COMM_STREAM, GELU, GEMM
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from tests.helpers.sample_traces import (
    COPY_BYTES,
    Document,
    GpuFacts,
    module_kernels,
    read_document,
    write_variant,
)

VARIANTS = {
    "sample": {},
    "one_layer_seed_1": {"layers": 1, "seed": 1},
    "eight_mlp_modules": {"layers": 8, "mlp_module": True},
}
MS, PCT, US = 1.1e-3, 0.011, 0.011  # the documents round ms to 3 and % and µs to 2 decimals


@cache
def _generated(name: str, folder: Path) -> tuple[Document, SystemInputs]:
    path = write_variant(folder / f"{name}.json.gz", **VARIANTS[name])
    model = build_model(load_trace(path))
    platform = get_platform("MI300X")
    report = build_report(model, platform)
    data = prepare(model, report, platform, str(path), "run")
    inputs = SystemInputs(
        manifest=data.manifest,
        timeline=Timeline.from_sheet(report.sheets["gpu_timeline"]),
        multi_kernel=data.multi_kernel,
        fusion_candidates=data.fusion_candidates,
        unified=report.sheets.get("unified_perf_summary"),
        platform=platform,
    )
    return read_document(path), inputs


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(params=sorted(VARIANTS))
def generated(request, folder: Path) -> tuple[Document, SystemInputs]:
    return _generated(request.param, folder)


def test_cpu_idle_is_the_raw_idle_time(generated) -> None:
    document, inputs = generated
    facts = GpuFacts.of(document)
    doc = analyze_cpu_idle(inputs).model_dump(mode="json")
    util = doc["gpu_utilization"]
    total = facts.total_us
    assert doc["status"] == "OK"
    assert util["total_time_ms"] == pytest.approx(total / 1000, abs=MS)
    assert util["idle_time_ms"] == pytest.approx(facts.idle_us / 1000, abs=MS)
    assert util["idle_time_percent"] == pytest.approx(100 * facts.idle_us / total, abs=PCT)
    assert util["computation_percent"] == pytest.approx(100 * facts.computation_us / total, abs=PCT)
    assert util["communication_percent"] == pytest.approx(
        100 * facts.exposed_comm_us / total, abs=PCT
    )
    assert util["memcpy_percent"] == pytest.approx(100 * facts.exposed_copy_us / total, abs=PCT)
    # the data-loader pause and the wait before the optimizer: more than 15 % of the step
    assert 100 * facts.idle_us / total > 15
    assert doc["idle_flagged"] is True


def test_multi_kernel_counts_the_planted_copy_and_all_reduce(generated) -> None:
    document, inputs = generated
    facts = GpuFacts.of(document)
    doc = analyze_multi_kernel(inputs).model_dump(mode="json")
    assert doc["status"] == "SUCCESS"
    (copy,) = facts.copies
    h2d = doc["memcpy_summary"]["by_direction"]
    assert list(h2d) == ["H2D"] and h2d["H2D"]["count"] == 1
    assert h2d["H2D"]["total_bytes"] == COPY_BYTES
    assert h2d["H2D"]["total_time_us"] == pytest.approx(copy[1] - copy[0], abs=US)
    nccl = doc["nccl_summary"]
    (comm,) = facts.comm
    assert nccl["total_count"] == 1 and facts.comm_names == [ALL_REDUCE]
    assert nccl["top_ops"] == [
        {"name": ALL_REDUCE, "duration_us": pytest.approx(comm[1] - comm[0], abs=US)}
        | {"stream": COMM_STREAM}
    ]
    overlap = doc["overlap_analysis"]
    assert overlap["total_time_us"] == pytest.approx(facts.total_us, abs=US)
    assert overlap["computation_time_us"] == pytest.approx(facts.computation_us, abs=US)
    assert overlap["total_comm_time_us"] == pytest.approx(comm[1] - comm[0], abs=US)
    assert overlap["exposed_comm_time_us"] == pytest.approx(facts.exposed_comm_us, abs=US)
    assert overlap["exposed_memcpy_time_us"] == pytest.approx(facts.exposed_copy_us, abs=US)
    hidden = 1 - facts.exposed_comm_us / (comm[1] - comm[0])
    assert overlap["comm_overlap_ratio"] == pytest.approx(hidden, abs=1e-4)
    exposed_pct = 100 * facts.exposed_comm_us / facts.total_us
    assert doc["nccl_blocking_assessment"]["flagged"] is (exposed_pct > 5)
    assert doc["overlap_assessment"]["flagged"] is (hidden * 100 < 70)
    assert doc["cross_validation"]["status"] == "PASS"


def test_kernel_fusion_estimates_the_planted_mlp_epilogue(folder: Path) -> None:
    document, inputs = _generated("eight_mlp_modules", folder)
    total_ms = GpuFacts.of(document).total_us / 1000
    kernels = module_kernels(document, "MLP_0")
    assert [k["name"] for k in kernels] == [GEMM, GELU, GEMM]
    one = sum(k["dur"] for k in kernels)
    every = sum(k["dur"] for n in range(8) for k in module_kernels(document, f"MLP_{n}"))
    (candidate,) = [c for c in inputs.fusion_candidates if c.base_name == "MLP"]
    assert (candidate.instance_count, candidate.kernel_count) == (8, 3)
    assert candidate.total_kernel_time_us == pytest.approx(every, abs=1e-6)

    doc = analyze_kernel_fusion(inputs).model_dump(mode="json")
    (estimate,) = doc["impact_estimates"]
    # the epilogue saves the GELU's time in each of the 8 instances (the first one's, times 8)
    high = kernels[1]["dur"] * 8 / 1000 / total_ms * 100
    assert estimate["impact_score_high"] == pytest.approx(high, abs=PCT)
    assert estimate["impact_score"] == pytest.approx(high * 0.875, abs=PCT)
    assert estimate["impact_score_low"] == pytest.approx(high * 0.75, abs=PCT)
    assert estimate["time_ms"] == pytest.approx(one * 8 / 1000, abs=MS)
    assert {k: estimate[k] for k in ("operation", "instance_count", "kernel_count")} == {
        "operation": "MLP",
        "instance_count": 8,
        "kernel_count": 3,
    }
    assert (estimate["estimation"], estimate["bound_type"], estimate["confidence"]) == (
        "full",
        "compute",
        "high",
    )
    assert estimate["fusion_type"] == "matrix_compute"
    assert estimate["affected_gpu_kernels"] == [GEMM, GELU, GEMM]
    assert doc["high_confidence_kernel_map"] == {GEMM: "MLP", GELU: "MLP"}


def test_the_plain_sample_has_nothing_worth_fusing(folder: Path) -> None:
    """Its only candidates are the backward GEMM pairs (GEMMs alone save nothing) and the two
    residual adds of a block (far below 2 % of the step)."""
    _, inputs = _generated("sample", folder)
    bases = {c.base_name: c.instance_count for c in inputs.fusion_candidates}
    assert bases == {
        "autograd::engine::evaluate_function: AddmmBackward0": 8,
        "TransformerBlock": 2,
    }
    doc = analyze_kernel_fusion(inputs).model_dump(mode="json")
    assert (doc["status"], doc["estimated_count"], doc["impact_estimates"]) == ("OK", 0, [])
