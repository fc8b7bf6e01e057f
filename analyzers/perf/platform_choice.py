"""Which platform a trace is scored against: a file, a catalogue name, or the trace's own GPU."""

from __future__ import annotations

from pathlib import Path

from rooflens.analyzers.perf.platforms import Platform, get_platform, load_platform_file
from rooflens.analyzers.trace.device import GpuIdentity


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
