"""Platform catalogue: schema validation, TraceLens arch files, aliases, error messages."""

from __future__ import annotations

import json
import re
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from rooflens.analyzers.perf.platforms import (
    COMPUTE_SPEC,
    Platform,
    PlatformFileError,
    UnknownPlatform,
    catalogue,
    get_platform,
    load_platform_file,
    platform_table,
)

REPO = Path(__file__).resolve().parents[3]
PACKAGED = REPO / "analyzers/perf/platforms"
# the platform keys analyzers/trace/device.py suggests
DEVICE_KEYS = {
    "V100_SXM2",
    "V100_PCIe",
    "T4",
    "A10",
    "A10G",
    "A40",
    "L4",
    "L40S",
    "RTX_2080_Ti",
    "RTX_3090",
    "RTX_4090",
    "MI100",
    "MI210",
    "MI250",
    "A100",
    "H100_SXM",
    "H100_PCIe",
    "H200",
    "B200",
    "MI250X",
    "MI300X",
    "MI325X",
    "MI355X",
}


def write(tmp_path: Path, data: Any, name: str = "MI999.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def tracelens_like(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "MI999",
        "mem_bw_gbps": 5300,
        "memory_gb": 192,
        "max_achievable_tflops": {"matrix_bf16": 708, "vector_fp32": 81},
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


# --- the packaged catalogue ---------------------------------------------------------------


def test_catalogue_covers_every_platform_device_detection_suggests() -> None:
    assert set(catalogue()) >= DEVICE_KEYS


@pytest.mark.parametrize("path", sorted(PACKAGED.glob("*.json")), ids=lambda p: p.stem)
def test_every_packaged_file_validates_and_is_complete(path: Path) -> None:
    platform = load_platform_file(path)
    assert platform.name == path.stem
    assert platform.vendor in ("NVIDIA", "AMD")
    assert platform.memory_gb
    assert platform.sources, "every figure needs a named source"
    absent = {t for s in platform.sources if s.where.startswith("absent") for t in _keys(s.what)}
    for unit in ("matrix", "vector"):
        for precision in ("fp64", "fp32", "fp16", "bf16"):
            key = f"{unit}_{precision}"
            # Volta and Turing have no BF16: absent, and a source says so
            assert platform.peak_tflops.get(key) or (precision == "bf16" and key in absent), key
    assert all(COMPUTE_SPEC.match(k) for k in platform.compute_specs())
    assert catalogue()[platform.name] == platform


def _keys(what: str) -> list[str]:
    return [t for t in re.split(r"[\s,]+", what) if t]


def _covered(figure: str, whats: list[str]) -> bool:
    """A `sources[].what` names the figure: itself, a glob (`matrix_*`), its table
    (`peak_tflops`, `max_achievable_tflops`) or `<table>.<key>`."""
    table, _, key = figure.rpartition(".")
    for token in (t for what in whats for t in _keys(what)):
        if token in (figure, key, table) or (key and fnmatch(key, token) and "*" in token):
            return True
    return False


@pytest.mark.parametrize("platform", sorted(catalogue()), ids=str)
def test_every_figure_has_a_source(platform: str) -> None:
    p = catalogue()[platform]
    figures = ["mem_bw_gbps", "memory_gb"]
    figures += [f"peak_tflops.{k}" for k in p.peak_tflops]
    figures += [f"max_achievable_tflops.{k}" for k in p.max_achievable_tflops or {}]
    figures += ["max_achievable_mem_bw_gbps"] * (p.max_achievable_mem_bw_gbps is not None)
    figures += [
        link for link in ("host_link", "gpu_link", "network_link") if getattr(p, link) is not None
    ]
    whats = [s.what for s in p.sources]
    assert [f for f in figures if not _covered(f, whats)] == []
    for source in p.sources:
        assert len(source.where) > 20, source  # a document named, not a bare number


def test_catalogue_is_cached_and_returns_a_fresh_dict() -> None:
    first = catalogue()
    first.pop("A100")
    assert "A100" in catalogue()
    assert catalogue()["B200"] is first["B200"]


def test_peaks_are_dense_and_ordered_sensibly() -> None:
    for platform in catalogue().values():
        peaks = platform.peak_tflops
        assert peaks["matrix_fp16"] >= peaks["matrix_fp32"] >= peaks["vector_fp64"]
        assert peaks["vector_fp32"] >= peaks["vector_fp64"]
        if "matrix_fp8" in peaks:
            # the L40S datasheet prints 362.05 dense BF16 beside 733 dense FP8
            assert peaks["matrix_fp8"] == pytest.approx(2 * peaks["matrix_fp16"], rel=0.025)


def test_mi300x_roof_uses_measured_maf_and_falls_back_to_peak() -> None:
    mi300x = get_platform("MI300X")
    assert mi300x.roof_tflops("matrix_bf16") == 708
    assert mi300x.roof_source("matrix_bf16") == "measured"
    assert mi300x.peak_tflops["matrix_bf16"] == 1307.4
    assert mi300x.roof_tflops("matrix_tf32") == 653.7  # no measured figure: datasheet peak
    assert mi300x.roof_source("matrix_tf32") == "peak"
    assert mi300x.roof_tflops("matrix_fp4") is None  # CDNA 3 has no FP4: no roofline
    assert mi300x.roof_source("matrix_fp4") is None
    assert mi300x.mem_bw() == 5300
    # §6.9 worked example: knee of the MI300X bf16 roofline ≈ 134 FLOP/B
    assert mi300x.roof_tflops("matrix_bf16") * 1e12 / (mi300x.mem_bw() * 1e9) == pytest.approx(
        133.6, abs=0.1
    )


def test_mi325x_carries_the_tracelens_measured_figures() -> None:
    mi325x = get_platform("MI325X")
    assert mi325x.mem_bw() == 6000
    measured = {k: mi325x.roof_tflops(k) for k in mi325x.max_achievable_tflops or {}}
    assert measured == {
        "matrix_fp16": 794,
        "matrix_bf16": 843,
        "matrix_fp32": 194,
        "matrix_fp64": 97,
        "matrix_fp8": 1519,
        "matrix_int8": 3094,
        "vector_fp16": 194,
        "vector_bf16": 194,
        "vector_fp32": 97,
        "vector_fp64": 48,
    }


def test_platform_without_measured_figures_uses_peaks() -> None:
    h100 = get_platform("H100_SXM")
    assert not h100.measured
    assert h100.roof_tflops("matrix_bf16") == 989
    assert h100.roof_source("matrix_bf16") == "peak"
    assert h100.mem_bw() == 3350
    assert h100.roof_tflops("matrix_fp4") is None


def test_table_rows() -> None:
    rows = {row.name: row for row in platform_table()}
    assert set(rows) == set(catalogue())
    mi300x = rows["MI300X"]
    assert (mi300x.vendor, mi300x.memory_gb, mi300x.mem_bw_gbps) == ("AMD", 192, 5300)
    assert (mi300x.matrix_bf16_tflops, mi300x.matrix_fp8_tflops, mi300x.measured) == (
        708,
        1273,
        True,
    )
    assert rows["A100"].matrix_fp8_tflops is None
    assert rows["B200"].measured is False


# --- TraceLens arch files ----------------------------------------------------------------------


def test_tracelens_file_loads_with_reference_and_simulator_keys(tmp_path: Path) -> None:
    data = tracelens_like(_reference="https://example.invalid/spec", freq_mhz=2100, num_cus=304)
    platform = load_platform_file(write(tmp_path, data))
    assert platform.reference == "https://example.invalid/spec"
    assert platform.vendor == "AMD"
    assert platform.roof_tflops("matrix_bf16") == 708
    assert platform.roof_tflops("matrix_fp16") is None  # TraceLens: missing key -> no roofline
    assert platform.mem_bw() == 5300
    assert platform.measured


def test_our_schema_with_sources_loads(tmp_path: Path) -> None:
    data = {
        "name": "X1",
        "vendor": "NVIDIA",
        "mem_bw_gbps": 1000,
        "peak_tflops": {"matrix_bf16": 100},
        "sources": [{"what": "everything", "where": "X1 datasheet"}],
    }
    platform = load_platform_file(str(write(tmp_path, data, "X1.json")))
    assert platform.sources[0].where == "X1 datasheet"
    assert platform.memory_gb is None


# --- errors name the file and the field ---------------------------------------------------


@pytest.mark.parametrize(
    "data, expected",
    [
        (
            tracelens_like(mem_bw_gbps=-5),
            "MI999.json: mem_bw_gbps: Input should be greater than 0",
        ),
        (
            tracelens_like(max_achievable_tflops={"matrix_bf16": 0}),
            "MI999.json: max_achievable_tflops.matrix_bf16: Input should be greater than 0",
        ),
        (
            tracelens_like(max_achievable_tflops={"matrix_bf17": 708}),
            "MI999.json: max_achievable_tflops.matrix_bf17: unknown compute spec 'matrix_bf17'",
        ),
        (tracelens_like(mem_bw_gbps=None), "MI999.json: mem_bw_gbps: Field required"),
        (
            tracelens_like(max_achievable_tflops={"matrix_bf16": "708"}),
            "max_achievable_tflops.matrix_bf16: Input should be a valid number",
        ),
        (tracelens_like(memory_gb=True), "memory_gb: Input should be a valid number"),
        (
            tracelens_like(peak_flops={"matrix_bf16": 1}),
            "peak_flops: Extra inputs are not permitted",
        ),
        (tracelens_like(vendor="Intel"), "vendor: Input should be 'NVIDIA' or 'AMD'"),
        (
            tracelens_like(max_achievable_tflops=None),
            "MI999.json: needs peak_tflops or max_achievable_tflops",
        ),
        ('{"name": "MI999", ', "MI999.json: not valid JSON"),
        ("[1, 2]", "MI999.json: expected a JSON object, got list"),
    ],
    ids=[
        "negative-bandwidth",
        "zero-flops",
        "unknown-key",
        "missing-bandwidth",
        "string-number",
        "bool-number",
        "extra-field",
        "bad-vendor",
        "no-flops",
        "not-json",
        "not-object",
    ],
)
def test_errors_name_file_and_field(tmp_path: Path, data: Any, expected: str) -> None:
    with pytest.raises(PlatformFileError, match=re.escape(expected)):
        load_platform_file(write(tmp_path, data))


def test_every_error_is_reported(tmp_path: Path) -> None:
    data = tracelens_like(mem_bw_gbps=0, max_achievable_tflops={"matrix_bf16": -1})
    with pytest.raises(PlatformFileError) as info:
        load_platform_file(write(tmp_path, data))
    assert "mem_bw_gbps:" in str(info.value)
    assert "max_achievable_tflops.matrix_bf16:" in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PlatformFileError, match=r"nope\.json: platform file not found"):
        load_platform_file(tmp_path / "nope.json")


def test_errors_are_value_errors() -> None:
    assert issubclass(PlatformFileError, ValueError)
    assert issubclass(UnknownPlatform, ValueError)


def test_unknown_keys_are_refused_in_the_model_too() -> None:
    with pytest.raises(ValueError, match="unknown compute spec 'vector_fp128'"):
        Platform.model_validate({"name": "x", "mem_bw_gbps": 1, "peak_tflops": {"vector_fp128": 1}})


# --- names and aliases -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "alias, name",
    [
        ("MI300X", "MI300X"),
        ("mi300x", "MI300X"),
        ("MI300X VF", "MI300X"),
        ("AMD Instinct MI300X VF", "MI300X"),
        ("AMD Instinct MI325X", "MI325X"),
        ("H100", "H100_SXM"),
        ("h100-sxm", "H100_SXM"),
        ("H100 SXM5", "H100_SXM"),
        ("H100 PCIe", "H100_PCIe"),
        ("h100_pcie", "H100_PCIe"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("b200", "B200"),
        ("mi250x", "MI250X"),
        ("MI210", "MI210"),
        ("mi250", "MI250"),
        ("AMD Instinct MI100", "MI100"),
        ("Tesla V100-SXM2-32GB", "V100_SXM2"),
        ("Tesla V100-PCIE-16GB", "V100_PCIe"),
        ("v100", "V100_SXM2"),
        ("Tesla T4", "T4"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 4090", "RTX_4090"),
        ("rtx 2080 ti", "RTX_2080_Ti"),
    ],
)
def test_aliases(alias: str, name: str) -> None:
    assert get_platform(alias).name == name


def test_unknown_platform_lists_known_names() -> None:
    with pytest.raises(UnknownPlatform) as info:
        get_platform("MI999")
    message = str(info.value)
    assert "'MI999'" in message
    for name in catalogue():
        assert name in message
    with pytest.raises(UnknownPlatform):
        # the name both MI250 parts report: the CU count decides (trace/device.py), not a name
        get_platform("AMD Instinct MI250X / MI250")


def test_the_source_check_finds_an_unsourced_figure() -> None:
    whats = ["mem_bw_gbps, matrix_*", "peak_tflops.vector_fp16"]
    assert _covered("mem_bw_gbps", whats)
    assert _covered("peak_tflops.matrix_fp8", whats)
    assert _covered("peak_tflops.vector_fp16", whats)
    assert not _covered("peak_tflops.vector_fp32", whats)
    assert not _covered("memory_gb", whats)
    assert not _covered("gpu_link", whats)
