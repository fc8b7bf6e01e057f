"""Which GPU recorded a trace, and which platform spec its roofline should use.

Names in `deviceProperties` are the first clue ("NVIDIA H100 80GB HBM3", "AMD Instinct
MI300X VF"); vLLM writes empty names, so compute capability, SM/CU count and memory size
decide then. Platform keys are the names of the platform catalogue.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel

from .schema import DeviceProperties

Vendor = Literal["NVIDIA", "AMD", "unknown"]
UNKNOWN_GPU = "unknown"  # the model of a trace without deviceProperties
GIB = 2**30

# (pattern on the device name, platform key); first match wins, so specific before general.
# Names as the runtime reports them: "Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 4090",
# "AMD Instinct MI250X / MI250" (both MI250 parts share that name: the CU count decides).
_LAPTOP = r"(?!.*Laptop)"
_BY_NAME: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), key)
    for p, key in (
        (r"MI355", "MI355X"),
        (r"MI325", "MI325X"),
        (r"MI300X", "MI300X"),
        (r"MI250", "MI250X"),
        (r"MI210", "MI210"),
        (r"MI100", "MI100"),
        (r"(?<!G)B200", "B200"),
        (r"H200", "H200"),
        (r"H100.*PCIe", "H100_PCIe"),
        (r"H100", "H100_SXM"),
        (r"A100", "A100"),
        (r"V100-PCIE", "V100_PCIe"),
        (r"V100-(SXM|DGXS)", "V100_SXM2"),
        (r"\bT4\b", "T4"),
        (r"\bA10G\b", "A10G"),
        (r"\bA10\b", "A10"),
        (r"\bA40\b", "A40"),
        (r"\bL40S\b", "L40S"),
        (r"\bL4\b", "L4"),
        (rf"RTX 2080 Ti\b{_LAPTOP}", "RTX_2080_Ti"),
        (rf"RTX 3090(?!\s*Ti){_LAPTOP}", "RTX_3090"),
        (rf"RTX 4090(?!\s*D\b){_LAPTOP}", "RTX_4090"),
    )
)
# an MI250X GCD has 110 CUs, an MI250 GCD 104
_MI250_BY_CUS = {104: "MI250", 110: "MI250X"}

# Unnamed devices: (vendor, compute capability, SM/CU count) -> (platform key, GiB range);
# only where no other GPU shares the three (V100 SXM2/PCIe, A40/RTX A6000 and L40/L40S/
# RTX 6000 Ada do, so they are left out).
_BY_SHAPE: dict[tuple[str, tuple[int, int], int], tuple[str, float, float]] = {
    ("NVIDIA", (7, 5), 40): ("T4", 14, 16.5),
    ("NVIDIA", (7, 5), 68): ("RTX_2080_Ti", 10, 11.5),
    ("NVIDIA", (8, 6), 82): ("RTX_3090", 22, 24.5),
    ("NVIDIA", (8, 9), 58): ("L4", 21, 24.5),
    ("NVIDIA", (8, 9), 128): ("RTX_4090", 22, 24.5),
    ("AMD", (9, 0), 120): ("MI100", 30, 32.5),
}


class GpuIdentity(BaseModel):
    """The GPU a trace ran on, as far as the trace tells."""

    vendor: Vendor
    model: str
    device_ids: list[int]
    suggested_platform: str | None
    reason: str


def identify_gpu(
    devices: Sequence[DeviceProperties], versions: Mapping[str, str], used: Sequence[int]
) -> GpuIdentity:
    """Name the GPU of the devices that ran GPU events (`used`), and suggest a platform."""
    by_id = {d.id: d for d in devices}
    chosen = [by_id[i] for i in used if i in by_id] or list(devices[:1])
    vendor = _vendor(chosen, versions)
    if not chosen:
        return GpuIdentity(
            vendor=vendor,
            model=UNKNOWN_GPU,
            device_ids=list(used),
            suggested_platform=None,
            reason="the trace has no deviceProperties; pass a platform explicitly",
        )
    device = chosen[0]
    name = device.name.strip()
    platform, reason = _platform(device, vendor)
    return GpuIdentity(
        vendor=vendor,
        model=name or _describe(device, vendor),
        device_ids=[d.id for d in chosen if d.id is not None],
        suggested_platform=platform,
        reason=reason,
    )


def _vendor(devices: Sequence[DeviceProperties], versions: Mapping[str, str]) -> Vendor:
    names = " ".join(d.name for d in devices).upper()
    if "NVIDIA" in names or any(k.startswith(("cuda", "cupti")) for k in versions):
        return "NVIDIA"
    if "AMD" in names or any(k.startswith(("hip", "roctracer")) for k in versions):
        return "AMD"
    return "unknown"


def _platform(device: DeviceProperties, vendor: Vendor) -> tuple[str | None, str]:
    name = device.name.strip()
    for pattern, key in _BY_NAME:
        if pattern.search(name):
            if key == "MI250X":
                key = _MI250_BY_CUS.get(device.numSms or 0, key)
            return key, f"device name '{name}'"
    cc = (device.computeMajor, device.computeMinor)
    sms = device.numSms
    mem = (device.totalGlobalMem or 0) / GIB
    facts = f"compute capability {cc[0]}.{cc[1]}, {sms} SMs/CUs, {mem:.0f} GiB"
    guess: str | None = None
    if vendor == "AMD":
        if cc == (9, 4) and sms == 304:
            guess = "MI325X" if mem > 220 else "MI300X"
        elif cc == (9, 5):
            guess = "MI355X"
        elif cc == (9, 0) and sms in (104, 110, 220):
            guess = "MI250X" if sms in (110, 220) else "MI210"
    elif vendor == "NVIDIA":
        if cc == (9, 0):
            guess = "H200" if mem > 100 else ("H100_PCIe" if sms == 114 else "H100_SXM")
        elif cc == (10, 0):
            guess = "B200"
        elif cc == (8, 0):
            guess = "A100"
    if guess is None and (shape := _BY_SHAPE.get((vendor, cc, sms or 0))):
        key, low, high = shape
        guess = key if low <= mem <= high else None
    if guess is None:
        return None, f"no catalogue platform matches '{name or 'unnamed GPU'}' ({facts})"
    if name:
        return guess, f"device '{name}' is not in the name table; guessed from {facts}"
    return guess, f"unnamed device with {facts}"


def _describe(device: DeviceProperties, vendor: Vendor) -> str:
    return f"unnamed {vendor} GPU (compute {device.computeMajor}.{device.computeMinor})"
