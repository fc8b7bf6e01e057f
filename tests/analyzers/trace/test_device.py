"""GPU recognition: device names as runtimes report them, and unnamed devices by shape."""

from __future__ import annotations

import pytest

from rooflens.analyzers.perf.platforms import catalogue
from rooflens.analyzers.trace.device import _BY_NAME, _BY_SHAPE, identify_gpu
from rooflens.analyzers.trace.schema import DeviceProperties

GIB = 2**30
CUDA = {"cuda_runtime_version": "12.1"}
HIP = {"hip_runtime_version": "6.1"}


def suggest(name: str, versions: dict[str, str] | None = None, **props: int) -> str | None:
    device = DeviceProperties(id=0, name=name, **props)
    return identify_gpu([device], versions or {}, [0]).suggested_platform


@pytest.mark.parametrize(
    "name, platform",
    [
        ("Tesla V100-SXM2-16GB", "V100_SXM2"),
        ("Tesla V100-SXM2-32GB", "V100_SXM2"),  # the shared DLRM traces
        ("Tesla V100-SXM3-32GB-H", "V100_SXM2"),
        ("Tesla V100-DGXS-32GB", "V100_SXM2"),
        ("Tesla V100-PCIE-16GB", "V100_PCIe"),
        ("Tesla T4", "T4"),
        ("NVIDIA A10", "A10"),
        ("NVIDIA A10G", "A10G"),
        ("NVIDIA A40", "A40"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA GeForce RTX 2080 Ti", "RTX_2080_Ti"),
        ("NVIDIA GeForce RTX 3090", "RTX_3090"),
        ("NVIDIA GeForce RTX 4090", "RTX_4090"),
        ("AMD Instinct MI100", "MI100"),
        ("AMD Instinct MI210", "MI210"),
        ("NVIDIA A100-SXM4-80GB", "A100"),
        ("NVIDIA H100 80GB HBM3", "H100_SXM"),
    ],
)
def test_real_device_names(name: str, platform: str) -> None:
    assert suggest(name) == platform


@pytest.mark.parametrize(
    "name",
    [
        "Tesla V100S-PCIE-32GB",  # faster clocks and HBM than V100 PCIe
        "Tesla V100-FHHL-16GB",  # the 150 W card, slower
        "NVIDIA L40",  # no FP8, other clocks than L40S
        "NVIDIA GeForce RTX 3090 Ti",
        "NVIDIA GeForce RTX 4090 D",
        "NVIDIA GeForce RTX 4090 Laptop GPU",  # a smaller chip
        "NVIDIA GeForce RTX 2080",
        "NVIDIA RTX A4000",  # must not read as A40
        "NVIDIA T400",  # must not read as T4
    ],
)
def test_near_misses_are_not_matched(name: str) -> None:
    assert suggest(name) is None


@pytest.mark.parametrize(
    "cus, platform",
    [(104, "MI250"), (110, "MI250X"), (None, "MI250X")],
)
def test_the_shared_mi250_name_is_split_by_cu_count(cus: int | None, platform: str) -> None:
    props = {} if cus is None else {"numSms": cus}
    assert suggest("AMD Instinct MI250X / MI250", **props) == platform


@pytest.mark.parametrize(
    "versions, cc, sms, gib, platform",
    [
        (CUDA, (7, 5), 40, 14.76, "T4"),  # deviceQuery: 15110 MiB
        (CUDA, (7, 5), 68, 10.76, "RTX_2080_Ti"),
        (CUDA, (8, 6), 82, 23.7, "RTX_3090"),
        (CUDA, (8, 9), 58, 22.5, "L4"),
        (CUDA, (8, 9), 128, 23.99, "RTX_4090"),
        (HIP, (9, 0), 120, 31.98, "MI100"),
        (HIP, (9, 0), 104, 64.0, "MI210"),
        # shared by several GPUs: no guess rather than a wrong roof
        (CUDA, (7, 0), 80, 31.7, None),  # V100 SXM2, V100 PCIe, V100S, Titan V
        (CUDA, (8, 6), 84, 47.5, None),  # A40 or RTX A6000
        (CUDA, (8, 9), 142, 44.4, None),  # L40, L40S or RTX 6000 Ada
        (CUDA, (7, 5), 40, 7.8, None),  # RTX 2070 SUPER, not a T4
        (HIP, (7, 5), 40, 14.76, None),  # right shape, wrong vendor
    ],
)
def test_unnamed_devices_by_shape(
    versions: dict[str, str],
    cc: tuple[int, int],
    sms: int,
    gib: float,
    platform: str | None,
) -> None:
    props = {"computeMajor": cc[0], "computeMinor": cc[1], "numSms": sms}
    got = suggest("", versions, totalGlobalMem=int(gib * GIB), **props)
    assert got == platform


def test_a_named_device_guessed_from_its_shape_says_so() -> None:
    device = DeviceProperties(
        id=0, name="Tesla T4 (vGPU)", computeMajor=7, computeMinor=5, numSms=40
    )
    gpu = identify_gpu([device], CUDA, [0])
    assert gpu.suggested_platform == "T4"  # the name table matches first
    device = DeviceProperties(
        id=0,
        name="NVIDIA Graphics Device",
        computeMajor=8,
        computeMinor=9,
        numSms=58,
        totalGlobalMem=int(22.5 * GIB),
    )
    gpu = identify_gpu([device], CUDA, [0])
    assert gpu.suggested_platform == "L4"
    assert gpu.reason.startswith("device 'NVIDIA Graphics Device' is not in the name table")


def test_every_suggested_key_is_in_the_catalogue() -> None:
    keys = {key for _, key in _BY_NAME} | {key for key, _, _ in _BY_SHAPE.values()}
    assert keys | {"MI250"} <= set(catalogue())
