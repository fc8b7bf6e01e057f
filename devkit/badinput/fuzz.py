"""A seeded mutation fuzzer for Kineto traces: damage a valid trace, run the engine, classify.

`fuzz_case(base, seed, folder)` draws one to three mutations with `random.Random(seed)`
(from `mutations`: the damaging ones of mutations.py and the layout and timing ones of
layout_mutations.py by default), writes the changed trace (.json or .json.gz) and runs it
through the engine as the front ends do (`run_engine`): inspect, the perf report and model
identification, then every step of `rooflens analyze` (category data, each analysis, the
drafts, the priorities and the report) into a run folder. The outcome is "refused" (a
TraceError, or a trace with no GPU work, which `analyze` refuses with its reason), "loaded"
(finite results, shares within [0, 100], strict JSON, a complete run folder) or "crash": any
other exception, or a loaded result that breaks one of those rules. The same seed always
writes the same file.
"""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from devkit.badinput.layout_mutations import LAYOUT_MUTATIONS
from devkit.badinput.mutations import (
    BYTE_MUTATIONS,
    DOCUMENT_MUTATIONS,
    Base,
    Damage,
    gzip_damage,
)
from rooflens.analyzers import layout
from rooflens.analyzers.findings.composing.model_info import model_identification, op_rows
from rooflens.analyzers.findings.composing.plot import Savings, Segment
from rooflens.analyzers.findings.ranking.priorities import PriorityData
from rooflens.analyzers.perf.platforms import Platform
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.steps import (
    LOADED,
    REPORTED,
    Pipeline,
    RunResults,
)
from rooflens.analyzers.replay.graph import CannotReplay
from rooflens.analyzers.replay.what_if import what_if
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.loading import missing_gpu_work
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import Inspection, inspect_trace
from rooflens.analyzers.trace.open_trace import open_trace

Kind = Literal["refused", "loaded", "crash", "hang"]  # "hang": set by a runner's timeout
Mutation = Callable[[Damage], None]
ALL_MUTATIONS: tuple[Mutation, ...] = DOCUMENT_MUTATIONS + LAYOUT_MUTATIONS
# Shares of a whole in the run's JSON. Not checked: efficiencies and differences (may pass
# 100 or go below 0).
SHARE_KEY = re.compile(r"percent(_of_\w+|_low|_mid|_high)?|\w+_time_percent|\w+_percent_of_total")


@dataclass(frozen=True)
class Outcome:
    seed: int
    kind: Kind
    mutations: tuple[str, ...]
    detail: str


# --- one case ---------------------------------------------------------------------------------


def write_case(
    base: Base,
    seed: int,
    folder: Path,
    mutations: Sequence[Mutation] = ALL_MUTATIONS,
    *,
    damage_bytes: bool = True,
) -> tuple[Path, tuple[str, ...]]:
    """Write the changed trace of `seed`; returns its path and the mutations applied.
    `damage_bytes`: now and then also damage the serialised text or its gzip stream."""
    rng = random.Random(seed)
    damage = Damage(base, rng)
    names: list[str] = []
    for mutate in rng.sample(list(mutations), min(len(mutations), rng.randint(1, 3))):
        mutate(damage)
        names.append(mutate.__name__)
    text = json.dumps(damage.doc, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
    for placeholder, raw in damage.raw.items():
        text = text.replace(f'"{placeholder}"', raw)
    data = text.encode("utf-8", "surrogatepass")
    if damage_bytes and rng.random() < 0.25:
        byte_mutation = rng.choice(BYTE_MUTATIONS)
        data = byte_mutation(rng, data)
        names.append(byte_mutation.__name__)
    compressed = rng.random() < 0.3
    if compressed:
        data = gzip_damage(rng, data) if damage_bytes else gzip.compress(data, mtime=0)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"fuzz_{seed}.json{'.gz' if compressed else ''}"
    path.write_bytes(data)
    return path, tuple(names)


def fuzz_case(
    base: Base,
    seed: int,
    folder: Path,
    platform: Platform | None,
    mutations: Sequence[Mutation] = ALL_MUTATIONS,
    *,
    damage_bytes: bool = True,
) -> Outcome:
    path, names = write_case(base, seed, folder, mutations, damage_bytes=damage_bytes)
    try:
        problems = run_engine(path, folder / f"run_{seed}", platform)
    except TraceError as exc:
        return Outcome(seed, "refused", names, exc.problem)
    except NoGpuWork as exc:
        return Outcome(seed, "refused", names, str(exc))
    except Exception as exc:  # the fuzzer's purpose: any other exception is the finding
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {exc} ({Path(where.filename).name}:{where.lineno})"
        return Outcome(seed, "crash", names, detail[:500])
    if problems:
        return Outcome(seed, "crash", names, "; ".join(problems)[:500])
    return Outcome(seed, "loaded", names, "")


class NoGpuWork(Exception):
    """`analyze` refuses the trace before writing anything (report/loading.py missing_gpu_work)."""


def run_engine(path: Path, out: Path, platform: Platform | None) -> list[str]:
    """inspect; open + perf report + model identification; then the analysis `rooflens
    analyze` runs, into the run folder `out`, and the replay `rooflens what-if` runs.
    Returns the broken rules, if any."""
    inspection = inspect_trace(path)
    model = open_trace(path)
    report = build_report(model, platform)
    folder = RunFolder(out)
    folder.write_perf_report(report, path.name, "gpu")
    model_identification(op_rows(report.sheets.get("unified_perf_summary")) or [])
    problems = list(_inspection_problems(inspection)) + list(_report_problems(report.sheets))
    if (missing := missing_gpu_work(model)) and not problems:
        raise NoGpuWork(missing)
    if missing:
        return problems
    results = RunResults(model, report, platform, str(path), str(out))
    done = [LOADED]

    def mark(*names: str) -> None:
        done.extend(names)

    steps = Pipeline(results, folder, done.__contains__, mark, draw=_check_drawing)
    steps.run(until=REPORTED)
    priced = list(_priced_problems(steps.priorities()))
    return problems + list(_run_problems(out)) + list(_replay_problems(model)) + priced


def _replay_problems(model) -> Iterator[str]:
    """`rooflens what-if` on the same trace: a clear refusal or finite figures."""
    try:
        found = what_if(model, [])
    except CannotReplay:
        return
    figures = [found.measured_step_ms, found.replayed_step_ms, found.replay_error_pct]
    figures.append(found.time_per_step_ms)
    figures += [item.ms for item in found.critical_path]
    if not all(math.isfinite(f) for f in figures):
        yield f"what-if: a figure is not finite ({figures[:3]})"


def _priced_problems(ranked: PriorityData) -> Iterator[str]:
    """The priorities' replay: finite figures, and no finding predicted to take a step
    below zero or to save more per step than the step holds."""
    summary = ranked.replay
    if summary is None or not summary.replayable:
        return
    figures = [summary.time_per_step_ms, summary.replayed_step_ms]
    for item in ranked.priorities:
        price = item.replay
        if price is None or price.predicted_step_ms is None:
            continue
        figures += [price.step_ms, price.predicted_step_ms, price.path_share]
        if (
            price.predicted_step_ms < -1e-6
            or (price.step_saving_high_ms or 0) > price.step_ms + 1e-6
        ):
            yield f"replay price of P{item.p_number}: {price.step_ms} -> {price.predicted_step_ms}"
    if not all(math.isfinite(f) for f in figures):
        yield "replay prices: a figure is not finite"


def _check_drawing(title: str, total: float, segments: list[Segment], savings: Savings) -> bytes:
    """Stands in for the PNG drawing (matplotlib would cost more than the rest of a case):
    the plot must get a finite, positive baseline and finite segment times."""
    if not (math.isfinite(total) and total > 0):
        raise ValueError(f"plot baseline {total!r}")
    if not all(math.isfinite(s.time_ms) and s.time_ms >= 0 for s in segments):
        raise ValueError(f"plot segment times {[s.time_ms for s in segments]}")
    return b"\x89PNG\r\n\x1a\n"


def _inspection_problems(inspection: Inspection) -> Iterator[str]:
    dumped = inspection.model_dump(mode="json")
    try:
        json.dumps(dumped, allow_nan=False)
    except ValueError as exc:
        yield f"inspect JSON: {exc}"
    if any(v is None for v in _timeline_values(dumped)):
        yield "inspect JSON: null in a timeline"
    rows = inspection.gpu_timeline + [r for d in inspection.per_device for r in d.gpu_timeline]
    for row in rows:
        if not 0.0 <= row.percent <= 100.0 or not 0.0 <= row.time_ms < math.inf:
            yield f"timeline row {row.type}: {row.time_ms} ms, {row.percent} %"


def _timeline_values(dumped: dict[str, Any]) -> Iterator[Any]:
    for row in dumped["gpu_timeline"]:
        yield from (row["time_ms"], row["percent"])
    for device in dumped["per_device"]:
        for row in device["gpu_timeline"]:
            yield from (row["time_ms"], row["percent"])


def _report_problems(sheets: dict[str, Any]) -> Iterator[str]:
    for name, sheet in sheets.items():
        numbers = sheet.select_dtypes("number")
        if np.isinf(numbers.to_numpy(dtype=float)).any():
            yield f"{name}: infinite value"
        for column in numbers.columns:
            if column == "percent" or "Percentage" in str(column):
                shares = numbers[column].to_numpy(dtype=float)
                # NaN counts as broken too; 1e-9 allows float noise in cumulative sums
                if not ((shares >= 0) & (shares <= 100 + 1e-9)).all():
                    yield f"{name}.{column}: share outside [0, 100] or missing"


def _run_problems(out: Path) -> Iterator[str]:
    """The run folder holds the report; its JSON is strict (no NaN) and its shares in range."""
    if not (out / layout.REPORT).is_file():
        yield f"no {layout.REPORT} in the run folder"
    for file in sorted(out.rglob("*.json")):
        try:
            document = json.loads(file.read_text(encoding="utf-8"), parse_constant=_no_constant)
        except ValueError as exc:
            yield f"{file.relative_to(out)}: {exc}"
            continue
        for key, value in _numbers(document, ""):
            if SHARE_KEY.fullmatch(key) and not 0.0 <= value <= 100.0 + 1e-6:
                yield f"{file.relative_to(out)}: {key} = {value}"


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def _numbers(value: Any, key: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _numbers(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v, key)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield key, float(value)
