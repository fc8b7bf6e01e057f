"""The reference outputs were computed with three TraceLens platform files: our catalogue
entries give the same rooflines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooflens.analyzers.perf.platforms import catalogue, load_platform_file

pytestmark = pytest.mark.slow  # comparisons on the real traces in ../shared

# reference file -> catalogue entry whose roofline must give the same numbers
REFERENCE = {"MI300X.json": "MI300X", "H100.json": "H100_SXM", "B200.json": "B200"}


@pytest.fixture(scope="module")
def reference_platforms(shared: Path) -> Path:
    return shared / "reference/tracelens/platforms"


@pytest.mark.parametrize("file, ours", sorted(REFERENCE.items()))
def test_reference_platform_files_give_the_same_roofline(
    reference_platforms: Path, file: str, ours: str
) -> None:
    theirs = load_platform_file(reference_platforms / file)
    mine = catalogue()[ours]
    reference_keys = json.loads((reference_platforms / file).read_text())["max_achievable_tflops"]
    assert set(theirs.compute_specs()) == set(reference_keys)
    for key in reference_keys:
        assert mine.roof_tflops(key) == theirs.roof_tflops(key), key
    assert mine.mem_bw() == theirs.mem_bw()
    assert mine.memory_gb == theirs.memory_gb
    # a TraceLens file has no vendor; it is inferred from the name
    assert theirs.vendor == mine.vendor


def test_reference_files_are_all_covered(reference_platforms: Path) -> None:
    assert {p.name for p in reference_platforms.glob("*.json")} <= set(REFERENCE)
