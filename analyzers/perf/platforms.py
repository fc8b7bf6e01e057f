"""GPU platform specs for the roofline: peak and measured FLOPS per compute spec, and bandwidth.

One JSON file per platform ships in `platforms/` next to this module. The schema extends
TraceLens's arch JSON (docs/perf-models.md#platforms), so a TraceLens file loads unchanged:

* `name`, `mem_bw_gbps` (GB/s, 1e9), `memory_gb`, optional `_reference` - as in TraceLens;
* `peak_tflops` - datasheet dense peaks, keys `<matrix|vector>_<precision>`;
* `max_achievable_tflops` / `max_achievable_mem_bw_gbps` - measured figures (TraceLens calls
  its measured "max achievable FLOPS" MAF; for its NVIDIA files the same key holds peaks);
* `vendor` and `sources` (which public document each figure comes from);
* `host_link` and `gpu_link` - the links a host<->device copy and a GPU<->GPU transfer or
  collective cross: kind, number of links, per-GPU GB/s one way and both ways (optional);
* `network_link` - the scale-out network a collective between nodes crosses, per GPU, in the
  GPU's reference system (optional).

The roofline uses the measured figure of a key when there is one, else the datasheet peak,
else nothing (no roofline for that compute spec, as in TraceLens).
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..trace.input_file import InputFileError, read_side_file

Vendor = Literal["NVIDIA", "AMD"]

PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp6", "fp4", "int8")
COMPUTE_SPEC = re.compile(rf"^(matrix|vector)_({'|'.join(PRECISIONS)})$")

# Optional keys of TraceLens arch files read only by its GEMM simulators; accepted so
# that existing files load, never used here.
SIMULATOR_KEYS = ("freq_mhz", "num_cus", "l1_bw_gbps", "gemm_units_per_cu")


def _compute_spec(key: str) -> str:
    if not COMPUTE_SPEC.match(key):
        raise PydanticCustomError(
            "compute_spec",
            "unknown compute spec '{key}'; expected <matrix|vector>_<{precisions}>",
            {"key": key, "precisions": "|".join(PRECISIONS)},
        )
    return key


ComputeSpec = Annotated[str, AfterValidator(_compute_spec)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False, strict=True)]
Tflops = dict[ComputeSpec, Positive]


class Source(BaseModel):
    """Where one or more figures come from (a public document, by name)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    what: str = Field(min_length=1)
    where: str = Field(min_length=1)


HostLinkKind = Literal[
    "PCIe 3.0 x16", "PCIe 4.0 x16", "PCIe 5.0 x16", "PCIe 6.0 x16", "NVLink-C2C", "Infinity Fabric"
]
GpuLinkKind = Literal[
    "NVLink 2", "NVLink 3", "NVLink 4", "NVLink 5", "xGMI/Infinity Fabric", "PCIe"
]
NetworkLinkKind = Literal["InfiniBand EDR", "InfiniBand HDR", "InfiniBand NDR", "Ethernet 400G"]


class _Link(BaseModel):
    """A link of one GPU; bandwidths are the GPU's total over `links`, in GB/s (1e9)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    links: Annotated[int, Field(gt=0, strict=True)] | None = None
    unidirectional_gbps: Positive | None = None
    bidirectional_gbps: Positive | None = None

    @model_validator(mode="after")
    def _has_bandwidth(self) -> _Link:
        one, both = self.unidirectional_gbps, self.bidirectional_gbps
        if one is None and both is None:
            raise PydanticCustomError(
                "no_bandwidth", "needs unidirectional_gbps or bidirectional_gbps (neither is given)"
            )
        if one is not None and both is not None and both < one:
            raise PydanticCustomError(
                "link_bandwidth", "bidirectional_gbps is below unidirectional_gbps"
            )
        return self

    def one_way_gbps(self) -> float:
        """GB/s in one direction: the stated figure, else half the bidirectional one."""
        if self.unidirectional_gbps is not None:
            return self.unidirectional_gbps
        return (self.bidirectional_gbps or 0.0) / 2


class HostLink(_Link):
    """Host <-> GPU: the link a host-to-device or device-to-host copy crosses."""

    kind: HostLinkKind


class GpuLink(_Link):
    """GPU <-> GPU: the link peer copies and collectives inside a node cross."""

    kind: GpuLinkKind


class NetworkLink(_Link):
    """GPU <-> GPU across nodes: the NIC share of one GPU in the platform's reference system
    (docs/perf-models.md#platforms); a collective spanning nodes crosses it."""

    kind: NetworkLinkKind


class PlatformSummary(BaseModel):
    """One row of a platform listing; FLOPS and bandwidth are the figures the roofline uses."""

    name: str
    vendor: str | None
    memory_gb: float | None
    mem_bw_gbps: float
    matrix_bf16_tflops: float | None
    matrix_fp8_tflops: float | None
    measured: bool = Field(description="the platform carries measured max-achievable figures")


class Platform(BaseModel):
    """A GPU's roofline figures; validates both our catalogue files and TraceLens arch files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    vendor: Vendor | None = None
    mem_bw_gbps: Positive
    memory_gb: Positive | None = None
    peak_tflops: Tflops = Field(default_factory=dict)
    max_achievable_tflops: Tflops | None = None
    max_achievable_mem_bw_gbps: Positive | None = None
    host_link: HostLink | None = None
    gpu_link: GpuLink | None = None
    network_link: NetworkLink | None = None
    sources: list[Source] = Field(default_factory=list)
    reference: str | None = Field(default=None, alias="_reference")
    freq_mhz: Positive | None = None
    num_cus: Positive | None = None
    l1_bw_gbps: Positive | None = None
    gemm_units_per_cu: Positive | None = None

    @model_validator(mode="after")
    def _has_flops(self) -> Platform:
        if not self.peak_tflops and not self.max_achievable_tflops:
            raise PydanticCustomError(
                "no_flops", "needs peak_tflops or max_achievable_tflops (neither is given)"
            )
        return self

    @property
    def measured(self) -> bool:
        """Measured (max-achievable) figures are present, for FLOPS or bandwidth."""
        return bool(self.max_achievable_tflops) or self.max_achievable_mem_bw_gbps is not None

    def roof_tflops(self, compute_spec: str) -> float | None:
        """TFLOPS of the roof for `compute_spec`: measured when known, else peak, else None."""
        if self.max_achievable_tflops and compute_spec in self.max_achievable_tflops:
            return self.max_achievable_tflops[compute_spec]
        return self.peak_tflops.get(compute_spec)

    def roof_source(self, compute_spec: str) -> Literal["measured", "peak"] | None:
        """Which figure `roof_tflops` uses for `compute_spec` (None: no roofline)."""
        if self.max_achievable_tflops and compute_spec in self.max_achievable_tflops:
            return "measured"
        return "peak" if compute_spec in self.peak_tflops else None

    def mem_bw(self) -> float:
        """Bandwidth of the roof in GB/s: measured when known, else the datasheet figure."""
        return self.max_achievable_mem_bw_gbps or self.mem_bw_gbps

    def compute_specs(self) -> list[str]:
        """Every compute spec with a roof, sorted."""
        return sorted({*self.peak_tflops, *(self.max_achievable_tflops or {})})

    def describe(self) -> PlatformSummary:
        return PlatformSummary(
            name=self.name,
            vendor=self.vendor,
            memory_gb=self.memory_gb,
            mem_bw_gbps=self.mem_bw(),
            matrix_bf16_tflops=self.roof_tflops("matrix_bf16"),
            matrix_fp8_tflops=self.roof_tflops("matrix_fp8"),
            measured=self.measured,
        )


class PlatformFileError(ValueError):
    """A platform file is missing, is not JSON, or does not follow the schema."""


class UnknownPlatform(ValueError):
    """No catalogue platform has this name or alias."""


def load_platform_file(path: str | Path) -> Platform:
    """Read one platform file: our schema or a TraceLens arch JSON (`--gpu_arch_json_path`)."""
    path = Path(path)
    try:  # a regular file only, and a small one (a FIFO would block: input_file.py)
        text = read_side_file(path, "platform file").decode("utf-8")
    except InputFileError as exc:
        said = f"{path}: platform file not found" if exc.problem == "file not found" else str(exc)
        raise PlatformFileError(said) from None
    except UnicodeDecodeError as exc:
        raise PlatformFileError(f"{path}: cannot read platform file ({exc})") from None
    return _parse(text, str(path))


def _parse(text: str, label: str) -> Platform:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PlatformFileError(
            f"{label}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise PlatformFileError(f"{label}: expected a JSON object, got {type(data).__name__}")
    if data.get("vendor") is None and isinstance(data.get("name"), str):
        data = {**data, "vendor": _guess_vendor(data["name"])}
    try:
        return Platform.model_validate(data)
    except ValidationError as exc:
        errors = "; ".join(map(_describe_error, exc.errors()))
        raise PlatformFileError(f"{label}: {errors}") from None


def _describe_error(error: Any) -> str:
    loc = ".".join(str(part) for part in error["loc"] if part != "[key]")
    return f"{loc}: {error['msg']}" if loc else error["msg"]


def _guess_vendor(name: str) -> Vendor | None:
    """Vendor of a TraceLens file, which has none: AMD Instinct names start with MI."""
    key = _normalise(name)
    if key.startswith("MI"):
        return "AMD"
    if re.match(r"^(G?[ABHLV]\d{2,3}|[LT]4|RTX)", key):
        return "NVIDIA"
    return None


@cache
def _catalogue() -> tuple[tuple[str, Platform], ...]:
    folder = files("rooflens.analyzers.perf") / "platforms"
    loaded = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json"):
            platform = _parse(entry.read_text(encoding="utf-8"), f"platforms/{entry.name}")
            loaded.append((platform.name, platform))
    return tuple(loaded)


def catalogue() -> dict[str, Platform]:
    """The packaged platforms by name (A100, H100_SXM, ..., MI355X); loaded once."""
    return dict(_catalogue())


# normalised alias -> catalogue name; names themselves match after normalisation too
ALIASES: dict[str, str] = {
    "A100SXM": "A100",
    "A100SXM4": "A100",
    "A100SXM480GB": "A100",
    "A10080GB": "A100",
    "H100": "H100_SXM",
    "H100SXM5": "H100_SXM",
    "H10080GBHBM3": "H100_SXM",
    "H100PCIE80GB": "H100_PCIe",
    "H200SXM": "H200",
    "B200SXM": "B200",
    "HGXB200": "B200",
    "MI300XOAM": "MI300X",
    "MI325XOAM": "MI325X",
    "MI355XOAM": "MI355X",
    "V100": "V100_SXM2",
    "V100SXM216GB": "V100_SXM2",
    "V100SXM232GB": "V100_SXM2",
    "V100PCIE16GB": "V100_PCIe",
    "V100PCIE32GB": "V100_PCIe",
    "MI250OAM": "MI250",
}

_PREFIXES = ("AMDINSTINCT", "INSTINCT", "AMD", "NVIDIAGEFORCE", "NVIDIA", "GEFORCE", "TESLA")


def _normalise(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", name.upper())


def get_platform(name: str) -> Platform:
    """A catalogue platform by name or alias, case-insensitively ("h100", "MI300X VF", ...)."""
    platforms = catalogue()
    by_key = {_normalise(n): n for n in platforms}
    key = _normalise(name)
    for prefix in _PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix):
            key = key[len(prefix) :]
            break
    # "MI300X VF": the SR-IOV virtual function of a cloud VM is the same GPU
    candidates = [key, key[:-2]] if key.endswith("VF") else [key]
    for candidate in candidates:
        found = by_key.get(candidate) or ALIASES.get(candidate)
        if found in platforms:
            return platforms[found]
    raise UnknownPlatform(
        f"unknown platform '{name}'; known platforms: {', '.join(platforms)}"
        " (aliases such as H100 -> H100_SXM are accepted; or pass a platform JSON file)"
    )


def platform_table() -> list[PlatformSummary]:
    """One summary row per catalogue platform, in name order."""
    return [p.describe() for p in catalogue().values()]
