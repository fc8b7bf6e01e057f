"""Truth: a GPU the catalogue does not know, analysed without a platform, gets the whole
analysis except the roofline, and one warning saying how to pass a platform
(docs/analysis.md#without-a-platform).

The trace is the generator's sample step (eight layers, each MLP in its own module) with its
device renamed to a Tesla P100 (compute capability 6.0, 56 SMs: in no catalogue entry).
Planted: per category, the kernels the generator wrote (Tensile `Cijk_` GEMMs, `attn_fwd`,
the layer-norm kernel, the vectorised elementwise kernels), all on one stream, so each
category's time is the sum of its kernels' durations in the file and the categories add up
to the timeline's computation time; and eight MLP modules (GEMM, GELU, GEMM), a fusion
candidate whose GELU is a GEMM epilogue: fusing saves the GELU's time, no roofline needed.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers import layout
from rooflens.analyzers.findings.validation.run_checks import validate_run
from rooflens.analyzers.perf.platform_choice import NO_PLATFORM_REASON
from rooflens.cli.main import main
from tests.helpers.sample_traces import (
    P100,
    GpuFacts,
    module_kernels,
    read_document,
    renamed_gpu,
    write_variant,
)

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

GPU = "Tesla P100-SXM2-16GB"
LAYERS = 8
# kernel name -> category, as the generator names its kernels
PLANTED = (
    ("Cijk_", "gemm"),
    ("attn_fwd", "sdpa_fwd"),
    ("layer_norm_kernel", "norm_fwd"),
    ("vectorized_elementwise_kernel", "elementwise"),
)
# every key whose value needs a roofline; without a platform each is null (or {}), never 0
ROOFLINE_KEYS = frozenset(
    {
        "efficiency_percent",
        "efficiency_pct",
        "resolved_peak_maf",
        "resolved_peak_hbm_bw",
        "peak_maf_tflops",
        "peak_hbm_bw_tbs",
        "max_achievable_tflops",
        "bound_type",  # but a fusion estimate's says whether a GEMM epilogue was fused
    }
)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("unknown_gpu")
    edit = renamed_gpu(GPU, **P100)
    trace = write_variant(folder / "p100.json.gz", edit, layers=LAYERS, mlp_module=True)
    out = folder / "run"
    printed = io.StringIO()
    with redirect_stdout(printed):
        code = main(["analyze", str(trace), "--out", str(out), "--json"])
    assert code == 0
    return trace, out, json.loads(printed.getvalue())


@pytest.fixture(scope="module")
def run(analysed: tuple[Path, Path, dict[str, Any]]) -> Path:
    return analysed[1]


def planted_ms(trace: Path) -> dict[str, float]:
    """Each category's kernel time (ms) as the generator wrote it."""
    out: dict[str, float] = {}
    for event in read_document(trace)["traceEvents"]:
        if event.get("ph") != "X" or event.get("cat") != "kernel":
            continue
        for needle, category in PLANTED:
            if needle in event["name"]:
                out[category] = out.get(category, 0.0) + event["dur"] / 1000
    return out


def load(run: Path, name: str) -> Any:
    return json.loads((run / name).read_text(encoding="utf-8"))


def test_analyze_exits_0_and_the_run_validates(run: Path) -> None:
    assert (run / layout.REPORT).is_file()
    result = validate_run(run)
    for check in ("time_check", "coverage_check", "priority_check", "efficiency_check"):
        assert getattr(result, check).status == "PASS", (check, getattr(result, check).messages)
    assert main(["validate", str(run)]) == 0  # the report's own checks too


def test_the_categories_and_their_shares_are_the_planted_kernel_times(analysed) -> None:
    trace, run, _ = analysed
    planted = planted_ms(trace)
    manifest = load(run, layout.MANIFEST)
    compute = {c["name"]: c for c in manifest["categories"] if c["tier"] == "compute_kernel"}
    assert set(compute) == set(planted)
    for key, ms in planted.items():
        assert compute[key]["gpu_kernel_time_ms"] == pytest.approx(round(ms, 3)), key
        assert load(run, layout.metrics(key))["total_time_ms"] == pytest.approx(round(ms, 3))
    facts = GpuFacts.of(read_document(trace))
    assert sum(planted.values()) * 1000 == pytest.approx(facts.computation_us)
    util = manifest["gpu_utilization"]
    assert util["computation_time_percent"] == pytest.approx(
        facts.computation_us / facts.total_us * 100
    )
    report = (run / layout.REPORT).read_text(encoding="utf-8")
    total = sum(planted.values())
    for key, display in (("gemm", "`GEMM`"), ("elementwise", "`elementwise`")):  # code spans
        share = planted[key] / total * 100
        assert f"| {display} | {planted[key]:.3f} | {share:.1f}% |" in report, key


def test_one_warning_says_how_to_pass_a_platform(analysed) -> None:
    _, run, outcome = analysed
    assert outcome["platform"] is None
    (warning,) = outcome["warnings"]
    assert warning.startswith(f"The GPU ({GPU}) is not in the platform catalogue")
    for how in ("--platform NAME", "`rooflens platforms`", "--platform-file PATH", "mem_bw_gbps"):
        assert how in warning, how
    report = (run / layout.REPORT).read_text(encoding="utf-8")
    section = report.split("## What this analysis could and could not see")[1].split("\n## ")[0]
    assert section.count("`no_platform`") == 2  # the coverage sentence, then the warning
    assert section.count(f"`no_platform`: {warning}") == 1


def _entries(document: Any) -> Iterator[tuple[dict[str, Any], str, Any]]:
    """Every (object, key, value) of a JSON document, depth first."""
    if isinstance(document, dict):
        for key, value in document.items():
            yield document, key, value
            yield from _entries(value)
    elif isinstance(document, list):
        for value in document:
            yield from _entries(value)


def test_no_roofline_number_anywhere(run: Path) -> None:
    documents = sorted(run.rglob("*.json"))
    assert len(documents) > 10
    for path in documents:
        for owner, key, value in _entries(load(run, path.relative_to(run).as_posix())):
            fusion = owner.get("type") == "kernel_fusion"
            if key in ROOFLINE_KEYS and not (key == "bound_type" and fusion):
                assert value in (None, {}, "unmodeled"), (path.name, key, value)
            if key == "platform":
                assert value is None, path.name
    for path in sorted((run / layout.PERF_CSVS).glob("*.csv")):
        with path.open(encoding="utf-8", newline="") as f:
            header = next(csv.reader(f), [])
        assert not [c for c in header if "Roofline" in c], path.name
    for key in ("gemm", "elementwise", "norm_fwd", "sdpa_fwd"):
        operations = load(run, layout.metrics(key))["operations"]
        assert operations and all(
            op["unmodelled_reason"] == NO_PLATFORM_REASON for op in operations
        ), key


def test_no_item_has_a_roofline_based_saving(run: Path) -> None:
    priorities = load(run, layout.PRIORITIES)
    compute = [i for i in priorities["priorities"] if i["kind"] == "compute"]
    assert compute, "the unmodelled ops still get their (unquantified) items"
    assert {i["estimate_method"] for i in compute} == {"unquantified"}
    assert all(i["saving"] is None for i in compute)
    for key in ("gemm", "elementwise", "norm_fwd", "sdpa_fwd"):
        estimates = load(run, layout.metrics(key)).get("impact_estimates") or []
        assert all(e["estimate_method"] == "heuristic" for e in estimates), key
        assert all(e["type"] == "unmodeled_significant" for e in estimates), key
    fusion = load(run, layout.metrics("kernel_fusion"))
    assert "peak_hbm_bw_tbs" not in fusion and "platform" not in fusion


def test_kernel_fusion_is_estimated_by_time_alone(analysed) -> None:
    trace, run, _ = analysed
    (item,) = [
        i for i in load(run, layout.PRIORITIES)["priorities"] if i["kind"] == "kernel_fusion"
    ]
    assert item["title"] == "Fuse `MLP` (3 kernels)"
    # the GELU is a GEMM epilogue: fusing saves its share of the first instance's kernel time,
    # applied to the time the eight instances took (when below the first one times eight)
    document = read_document(trace)
    instances = [module_kernels(document, f"MLP_{i}") for i in range(LAYERS)]
    gemm, gelu, _ = instances[0]
    assert "Cijk_" in gemm["name"] and "Gelu" in gelu["name"]
    first = sum(k["dur"] for k in instances[0])
    took = min(first * LAYERS, sum(k["dur"] for kernels in instances for k in kernels))
    saved_ms = gelu["dur"] / first * took / 1000
    window_ms = load(run, layout.MANIFEST)["gpu_utilization"]["total_time_ms"]
    rounding = 0.006 / 100 * window_ms  # scores are % of the window to 2 decimals
    # the flat estimate sizes the change; the replay prices it: the sample step's host sets
    # the pace (docs/what-if.md#priorities-from-the-replay), so the fusion buys no step time
    assert item["replay"]["flat_mid_ms"] == pytest.approx(0.875 * saved_ms, abs=rounding)
    assert item["replay"]["predicted_step_ms"] == item["replay"]["step_ms"]
    assert item["saving"]["high_ms"] == 0.0
    assert "no platform, no roofline" in item["saving"]["basis"]
