"""The GPUs of the catalogue beyond the first four, and the link figures: hand-checked values,
schema rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from rooflens.analyzers.perf.platforms import (
    GpuLink,
    HostLink,
    PlatformFileError,
    catalogue,
    get_platform,
    load_platform_file,
)

# (platform, figure, value) read off the vendor documents named in the files' sources
DATASHEET = [
    ("V100_SXM2", "mem_bw_gbps", 900),
    ("V100_SXM2", "matrix_fp16", 125),
    ("V100_SXM2", "vector_fp64", 7.8),
    ("V100_PCIe", "matrix_fp16", 112),
    ("V100_PCIe", "vector_fp32", 14),
    ("T4", "matrix_fp16", 65),
    ("T4", "matrix_int8", 130),
    ("T4", "vector_fp32", 8.1),
    ("A10", "matrix_bf16", 125),  # 250 with sparsity, halved
    ("A10", "mem_bw_gbps", 600),
    ("A10G", "mem_bw_gbps", 600),
    ("A40", "matrix_fp16", 149.7),
    ("A40", "mem_bw_gbps", 696),
    ("L4", "matrix_fp8", 242.5),  # 485 with sparsity, halved
    ("L4", "mem_bw_gbps", 300),
    ("L40S", "matrix_bf16", 362.05),
    ("L40S", "matrix_fp8", 733),
    ("L40S", "mem_bw_gbps", 864),
    ("RTX_2080_Ti", "matrix_fp16", 56.9),  # FP32 accumulate, as PyTorch runs it
    ("RTX_2080_Ti", "mem_bw_gbps", 616),
    ("RTX_3090", "matrix_bf16", 71),
    ("RTX_3090", "mem_bw_gbps", 936),
    ("RTX_4090", "matrix_fp8", 330.3),
    ("RTX_4090", "vector_fp32", 82.6),
    ("RTX_4090", "mem_bw_gbps", 1008),
    ("MI100", "matrix_fp16", 184.6),
    ("MI100", "matrix_bf16", 92.3),
    ("MI100", "mem_bw_gbps", 1228.8),
    ("MI250", "matrix_bf16", 181.0),  # 362.1 per OAM, one GCD is one device
    ("MI250", "vector_fp64", 22.6),
    ("MI250", "mem_bw_gbps", 1638.4),
]
NEW = sorted({name for name, _, _ in DATASHEET})
# data-centre parts: both links known, with figures
DATA_CENTRE = [
    "V100_SXM2", "V100_PCIe", "T4", "A10", "A10G", "A40", "L4", "L40S", "A100", "H100_SXM",
    "H100_PCIe", "H200", "MI100", "MI210", "MI250", "MI250X", "MI300X", "MI325X", "MI355X",
]  # fmt: skip


@pytest.mark.parametrize("name, figure, value", DATASHEET)
def test_datasheet_figures(name: str, figure: str, value: float) -> None:
    platform = get_platform(name)
    got = platform.mem_bw_gbps if figure == "mem_bw_gbps" else platform.peak_tflops[figure]
    assert got == value


@pytest.mark.parametrize("name", NEW)
def test_new_gpus_have_no_measured_figures_so_the_roof_is_the_peak(name: str) -> None:
    platform = get_platform(name)
    assert not platform.measured
    assert platform.mem_bw() == platform.mem_bw_gbps
    for spec in platform.compute_specs():
        assert platform.roof_source(spec) == "peak"
        assert platform.roof_tflops(spec) == platform.peak_tflops[spec]


def test_gpus_without_bf16_hardware_have_no_bf16_roof() -> None:
    for name in ("V100_SXM2", "V100_PCIe", "T4", "RTX_2080_Ti"):
        platform = get_platform(name)
        assert platform.roof_tflops("matrix_bf16") is None
        assert platform.roof_tflops("matrix_tf32") is None
        assert platform.describe().matrix_bf16_tflops is None


def test_every_platform_names_its_gpu_link() -> None:
    assert [n for n, p in catalogue().items() if p.gpu_link is None] == []


@pytest.mark.parametrize("name", DATA_CENTRE)
def test_data_centre_parts_have_both_links(name: str) -> None:
    platform = get_platform(name)
    assert platform.host_link is not None and platform.gpu_link is not None
    assert platform.host_link.one_way_gbps() > 0
    assert platform.gpu_link.one_way_gbps() >= platform.host_link.one_way_gbps()


@pytest.mark.parametrize(
    "name, host, gpu",
    [
        ("H100_SXM", ("PCIe 5.0 x16", 64, 128), ("NVLink 4", 450, 900)),
        ("H200", ("PCIe 5.0 x16", 64, 128), ("NVLink 4", 450, 900)),
        ("A100", ("PCIe 4.0 x16", 32, 64), ("NVLink 3", 300, 600)),
        ("V100_SXM2", ("PCIe 3.0 x16", 16, 32), ("NVLink 2", 150, 300)),
        ("V100_PCIe", ("PCIe 3.0 x16", 16, 32), ("PCIe", 16, 32)),
        ("T4", ("PCIe 3.0 x16", 16, 32), ("PCIe", 16, 32)),
        ("L40S", ("PCIe 4.0 x16", 32, 64), ("PCIe", 32, 64)),
        ("A40", ("PCIe 4.0 x16", 32, 64), ("NVLink 3", 56.25, 112.5)),
        ("RTX_3090", ("PCIe 4.0 x16", 32, 64), ("NVLink 3", 56.25, 112.5)),
        ("MI100", ("PCIe 4.0 x16", 32, 64), ("xGMI/Infinity Fabric", 138, 276)),
        ("MI300X", ("PCIe 5.0 x16", 64, 128), ("xGMI/Infinity Fabric", 448, 896)),
        ("MI355X", ("PCIe 5.0 x16", 64, 128), ("xGMI/Infinity Fabric", 537.6, 1075.2)),
    ],
)
def test_link_figures(name: str, host: tuple, gpu: tuple) -> None:
    platform = get_platform(name)
    for link, (kind, one, both) in ((platform.host_link, host), (platform.gpu_link, gpu)):
        assert link is not None
        assert (link.kind, link.unidirectional_gbps, link.bidirectional_gbps) == (kind, one, both)


def test_link_counts_multiply_out() -> None:
    # 18 NVLink 4 links x 25 GB/s per direction; 7 xGMI links x 64 GB/s per direction
    h100, mi300x = get_platform("H100_SXM").gpu_link, get_platform("MI300X").gpu_link
    assert h100 is not None and h100.links == 18 and h100.unidirectional_gbps == 18 * 25
    assert mi300x is not None and mi300x.links == 7 and mi300x.unidirectional_gbps == 7 * 64


def test_b200_host_link_is_left_out_rather_than_guessed() -> None:
    b200 = get_platform("B200")
    assert b200.host_link is None
    assert any(s.what == "host_link" and s.where.startswith("absent") for s in b200.sources)


# --- the link schema -----------------------------------------------------------------------


def test_one_way_figure_falls_back_to_half_the_bidirectional_one() -> None:
    assert GpuLink(kind="NVLink 5", bidirectional_gbps=1800).one_way_gbps() == 900
    assert HostLink(kind="NVLink-C2C", unidirectional_gbps=450).one_way_gbps() == 450


@pytest.mark.parametrize(
    "link, message",
    [
        ({"kind": "PCIe 4.0 x16"}, "needs unidirectional_gbps or bidirectional_gbps"),
        (
            {"kind": "PCIe 4.0 x16", "unidirectional_gbps": 64, "bidirectional_gbps": 32},
            "bidirectional_gbps is below unidirectional_gbps",
        ),
        ({"kind": "PCIe 7.0 x16", "unidirectional_gbps": 1}, "Input should be 'PCIe 3.0 x16'"),
        ({"kind": "PCIe 4.0 x16", "unidirectional_gbps": 0}, "greater than 0"),
        ({"kind": "PCIe 4.0 x16", "unidirectional_gbps": 1, "lanes": 16}, "Extra inputs"),
    ],
    ids=["no-bandwidth", "both-below-one", "unknown-kind", "zero", "extra-field"],
)
def test_bad_host_links_are_refused(link: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        HostLink.model_validate(link)


def test_gpu_link_kinds_are_not_host_link_kinds() -> None:
    with pytest.raises(ValidationError):
        GpuLink.model_validate({"kind": "PCIe 5.0 x16", "bidirectional_gbps": 128})
    with pytest.raises(ValidationError):
        HostLink.model_validate({"kind": "NVLink 4", "bidirectional_gbps": 900})


def test_a_bad_link_in_a_file_names_the_field(tmp_path: Path) -> None:
    data = {
        "name": "X1",
        "mem_bw_gbps": 1000,
        "peak_tflops": {"matrix_bf16": 100},
        "gpu_link": {"kind": "NVLink 4", "links": 0, "bidirectional_gbps": 900},
    }
    path = tmp_path / "X1.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PlatformFileError, match=r"X1\.json: gpu_link\.links: Input should be"):
        load_platform_file(path)


def test_a_tracelens_arch_file_has_no_links(tmp_path: Path) -> None:
    data = {"name": "MI300X", "mem_bw_gbps": 5300, "max_achievable_tflops": {"matrix_bf16": 708}}
    path = tmp_path / "MI300X.json"
    path.write_text(json.dumps(data))
    platform = load_platform_file(path)
    assert (platform.host_link, platform.gpu_link) == (None, None)
    assert platform.roof_tflops("matrix_bf16") == 708


@pytest.mark.parametrize(
    "name, kind, one_way",
    [
        ("V100_SXM2", "InfiniBand EDR", 6.25),  # DGX-1: 4 x 100 Gb/s for 8 GPUs
        ("A100", "InfiniBand HDR", 25),  # one 200 Gb/s NIC per GPU
        ("H100_SXM", "InfiniBand NDR", 50),  # one 400 Gb/s NIC per GPU
        ("H200", "InfiniBand NDR", 50),
        ("B200", "InfiniBand NDR", 50),
        ("MI300X", "Ethernet 400G", 50),
    ],
)
def test_network_links_are_the_reference_system_s_nic_share(
    name: str, kind: str, one_way: float
) -> None:
    link = get_platform(name).network_link
    assert link is not None and (link.kind, link.one_way_gbps()) == (kind, one_way)
    assert link.one_way_gbps() < get_platform(name).gpu_link.one_way_gbps()
