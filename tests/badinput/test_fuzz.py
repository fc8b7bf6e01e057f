"""The seeded mutation fuzzer on the synthetic sample: no case may crash the engine.

Only two outcomes are allowed: a TraceError, or a load whose results are finite with shares
within [0, 100] and whose report folder is complete. benchmarks/fuzz_traces.py runs the same
fuzzer on a real trace with as many cases as you like.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from devkit.badinput.corpus import sample_bytes
from devkit.badinput.fuzz import fuzz_case, write_case
from devkit.badinput.mutations import BYTE_MUTATIONS, DOCUMENT_MUTATIONS, Base
from rooflens.analyzers.perf.platforms import Platform, get_platform

CASES = 220  # ~25 s on two cores


@pytest.fixture(scope="module")
def base() -> Base:
    return Base(json.loads(sample_bytes()))


@pytest.fixture(scope="module")
def platform() -> Platform:
    return get_platform("MI300X")


@pytest.mark.parametrize("seed", range(CASES))
def test_a_damaged_trace_is_refused_or_loaded_never_a_crash(
    seed: int, base: Base, platform: Platform, tmp_path: Path
) -> None:
    outcome = fuzz_case(base, seed, tmp_path, platform)
    assert outcome.kind in ("refused", "loaded"), (outcome.mutations, outcome.detail)


def test_the_same_seed_writes_the_same_file(base: Base, tmp_path: Path) -> None:
    for seed in (3, 17, 101):
        first, names = write_case(base, seed, tmp_path / "a")
        again, names_again = write_case(base, seed, tmp_path / "b")
        assert first.read_bytes() == again.read_bytes()
        assert names == names_again
    assert write_case(base, 4, tmp_path / "c")[0].read_bytes() != first.read_bytes()


def test_the_suite_seeds_use_every_mutation_several_times(base: Base, tmp_path: Path) -> None:
    used: Counter[str] = Counter()
    for seed in range(CASES):
        used.update(write_case(base, seed, tmp_path)[1])
    every = {m.__name__ for m in DOCUMENT_MUTATIONS + BYTE_MUTATIONS}
    assert every <= set(used), every - set(used)
    assert min(used[name] for name in every) >= 5
