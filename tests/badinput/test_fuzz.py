"""The seeded mutation fuzzer on the synthetic sample: no case may crash the engine.

Only two outcomes are allowed: a TraceError (or a trace with no GPU work, which `analyze`
refuses with its reason), or a load whose results are finite with shares within [0, 100],
whose JSON is strict and whose run folder holds the report: every case runs inspect, the
perf report and the whole of `rooflens analyze` (devkit/badinput/fuzz.py).
benchmarks/fuzz_traces.py runs the same fuzzer on real traces with as many cases as you like.

Two samples: `CASES` seeds drawing from every mutation (damaging, layout and timing), and
`LAYOUT_CASES` seeds drawing only from the layout and timing ones (layout_mutations.py: zero
and equal times, whole microseconds, one kernel field changed, the 2021 names, text thread
ids, orphaned launches and kernels), which keep the trace readable and so reach every
analysis; those are the cases that found a zero-length kernel breaking the launch-gap
analysis.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from devkit.badinput.corpus import SAMPLE_GPU_EVENTS, sample_bytes
from devkit.badinput.fuzz import ALL_MUTATIONS, fuzz_case, write_case
from devkit.badinput.layout_mutations import LAYOUT_MUTATIONS, format_2021, string_tids
from devkit.badinput.mutations import BYTE_MUTATIONS, Base, Damage
from rooflens.analyzers.perf.platforms import Platform, get_platform
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model

pytestmark = pytest.mark.slow  # mutation fuzzing: many whole runs

CASES = 160
LAYOUT_CASES = 60
LAYOUT_SEEDS = range(10_000, 10_000 + LAYOUT_CASES)  # apart from the first sample's seeds


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


@pytest.mark.parametrize("seed", LAYOUT_SEEDS)
def test_a_relaid_or_retimed_trace_is_analysed_to_the_end(
    seed: int, base: Base, platform: Platform, tmp_path: Path
) -> None:
    outcome = fuzz_case(base, seed, tmp_path, platform, LAYOUT_MUTATIONS, damage_bytes=False)
    assert outcome.kind in ("refused", "loaded"), (outcome.mutations, outcome.detail)


@pytest.mark.parametrize("mutate", [format_2021, string_tids], ids=lambda m: m.__name__)
@pytest.mark.parametrize("seed", range(3))
def test_the_2021_layout_links_every_gpu_event_as_before(
    mutate, seed: int, base: Base, tmp_path: Path
) -> None:
    import random

    damage = Damage(base, random.Random(seed))
    mutate(damage)
    path = tmp_path / "relaid.json"
    path.write_text(json.dumps(damage.doc))
    gpu = build_model(load_trace(path)).gpu
    assert len(gpu) == SAMPLE_GPU_EVENTS
    assert gpu["linked"].all()


def test_the_same_seed_writes_the_same_file(base: Base, tmp_path: Path) -> None:
    for seed in (3, 17, 101, 10_005):
        first, names = write_case(base, seed, tmp_path / "a")
        again, names_again = write_case(base, seed, tmp_path / "b")
        assert first.read_bytes() == again.read_bytes()
        assert names == names_again
    assert write_case(base, 4, tmp_path / "c")[0].read_bytes() != first.read_bytes()


def test_the_suite_seeds_use_every_mutation_several_times(base: Base, tmp_path: Path) -> None:
    used: Counter[str] = Counter()
    for seed in range(CASES):
        used.update(write_case(base, seed, tmp_path)[1])
    for seed in LAYOUT_SEEDS:
        used.update(write_case(base, seed, tmp_path, LAYOUT_MUTATIONS, damage_bytes=False)[1])
    every = {m.__name__ for m in ALL_MUTATIONS + BYTE_MUTATIONS}
    assert every <= set(used), every - set(used)
    assert min(used[m.__name__] for m in ALL_MUTATIONS) >= 5
    assert min(used[m.__name__] for m in BYTE_MUTATIONS) >= 3  # a quarter of the cases
    assert min(used[m.__name__] for m in LAYOUT_MUTATIONS) >= 15
