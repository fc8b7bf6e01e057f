"""Which platform a trace is scored against: a file, a catalogue name, or the trace's own GPU.

When none applies the run goes on without a roofline (docs/analysis.md#without-a-platform):
`no_platform_warning` is the one warning that says so and how to pass a platform, and
`NO_PLATFORM_REASON` is why each operation is then unmodelled.
"""

from __future__ import annotations

from pathlib import Path

from ..trace.device import UNKNOWN_GPU, GpuIdentity
from ..trace.health import HealthWarning, TraceHealth
from .platforms import Platform, get_platform, load_platform_file

NO_PLATFORM = "no_platform"
NO_PLATFORM_REASON = "unmodelled: no platform known (pass --platform NAME or --platform-file PATH)"
PLATFORM_FILE_EXAMPLE = (
    '{"name": "MY_GPU", "mem_bw_gbps": 900, "peak_tflops": {"matrix_bf16": 125, "vector_fp32": 20}}'
)


def choose_platform(
    name: str | None, file: Path | str | None, gpu: GpuIdentity
) -> tuple[Platform | None, str]:
    """The platform to score against, and a sentence saying where it came from."""
    if file:
        return load_platform_file(file), f"platform file {Path(file).name}"
    if name:
        return get_platform(name), f"platform {name}"
    if gpu.suggested_platform:
        return get_platform(gpu.suggested_platform), (
            f"platform {gpu.suggested_platform}, suggested by the trace ({gpu.reason})"
        )
    return None, f"no platform ({gpu.reason}); roofline columns omitted"


def no_platform_warning(gpu: GpuIdentity) -> HealthWarning:
    """The run's one warning when no platform is known: what is missing, how to add it."""
    return HealthWarning(
        code=NO_PLATFORM,
        severity="warning",
        message=(
            f"{_which(gpu)} and no platform was given ({gpu.reason}), so nothing is scored "
            "against a roofline: no efficiency, roofline bound or roofline-based saving is "
            "reported. The rest of the analysis (timeline, categories, host side, copies, "
            "kernel fusion from measured times) does not need one. To add the roofline, run "
            "again with --platform NAME for a catalogue GPU (`rooflens platforms` lists them) "
            "or --platform-file PATH (MCP tools: `platform` or `platform_file`) naming a JSON "
            f"file with the GPU's figures, at least {PLATFORM_FILE_EXAMPLE} (bandwidth in "
            "GB/s; dense TFLOPS keyed by kind and precision, such as matrix_bf16 or "
            "vector_fp32; docs/perf-models.md#platforms)."
        ),
    )


def _which(gpu: GpuIdentity) -> str:
    if gpu.model == UNKNOWN_GPU:  # no deviceProperties at all
        return "The trace does not say which GPU recorded it"
    return f"The GPU ({gpu.model}) is not in the platform catalogue"


def platform_warnings(gpu: GpuIdentity, platform: Platform | None) -> list[HealthWarning]:
    """The run's own warnings beside the trace's health: one when no platform is known."""
    return [] if platform is not None else [no_platform_warning(gpu)]


def run_warnings(health: TraceHealth, platform: Platform | None) -> list[HealthWarning]:
    """The trace's health warnings, then the run's own."""
    return [*health.warnings, *platform_warnings(health.gpu, platform)]
