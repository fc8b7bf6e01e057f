"""Choosing the platform, and the one warning when none is known
(docs/analysis.md#without-a-platform)."""

from __future__ import annotations

from rooflens.analyzers.perf.platform_choice import (
    NO_PLATFORM,
    choose_platform,
    no_platform_warning,
    platform_warnings,
)
from rooflens.analyzers.perf.platforms import get_platform, load_platform_file
from rooflens.analyzers.trace.device import GpuIdentity, identify_gpu
from rooflens.analyzers.trace.schema import DeviceProperties

P100 = DeviceProperties(
    id=0, name="Tesla P100-SXM2-16GB", computeMajor=6, computeMinor=0, numSms=56,
    totalGlobalMem=17071734784,
)  # fmt: skip


def p100() -> GpuIdentity:
    return identify_gpu([P100], {"cuda_runtime_version": "12040"}, [0])


def test_an_unknown_gpu_without_a_name_or_file_gets_no_platform():
    platform, source = choose_platform(None, None, p100())
    assert platform is None
    assert source.startswith("no platform (no catalogue platform matches 'Tesla P100")
    assert choose_platform("A100", None, p100())[0] == get_platform("A100")


def test_the_warning_names_the_gpu_and_how_to_pass_a_platform(tmp_path):
    (warning,) = platform_warnings(p100(), None)
    assert (warning.code, warning.severity) == (NO_PLATFORM, "warning")
    assert warning.message.startswith(
        "The GPU (Tesla P100-SXM2-16GB) is not in the platform catalogue and no platform was "
        "given (no catalogue platform matches"
    )
    for how in ("--platform NAME", "`rooflens platforms`", "--platform-file PATH", "platform_file"):
        assert how in warning.message, how
    # the example in the message is a platform file that loads
    start = warning.message.index('{"name"')
    example = warning.message[start : warning.message.index("}}", start) + 2]
    (tmp_path / "gpu.json").write_text(example)
    assert load_platform_file(tmp_path / "gpu.json").name == "MY_GPU"
    assert platform_warnings(p100(), get_platform("A100")) == []


def test_a_trace_without_device_properties_is_said_to_name_no_gpu():
    unnamed = identify_gpu([], {}, [0])
    message = no_platform_warning(unnamed).message
    assert message.startswith("The trace does not say which GPU recorded it and no platform")
    assert "the trace has no deviceProperties" in message
