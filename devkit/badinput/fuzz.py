"""A seeded mutation fuzzer for Kineto traces: damage a valid trace, run the engine, classify.

`fuzz_case(base, seed, folder)` draws one to three mutations with `random.Random(seed)`,
writes the damaged trace (.json or .json.gz) and runs it through the engine as the front
ends do (`run_engine`). The outcome is "refused" (a TraceError), "loaded" (finite results,
shares within [0, 100], a complete report folder) or "crash": any other exception, or a
loaded result that breaks one of those rules. The same seed always writes the same file.

The mutations themselves are in mutations.py.
"""

from __future__ import annotations

import json
import math
import random
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from devkit.badinput.mutations import (
    BYTE_MUTATIONS,
    DOCUMENT_MUTATIONS,
    Base,
    Damage,
    gzip_damage,
)
from rooflens.analyzers.findings.model_info import model_identification, op_rows
from rooflens.analyzers.perf.platforms import Platform
from rooflens.analyzers.report.build import build_report
from rooflens.analyzers.report.files import write_perf_report
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.inspect import Inspection, inspect_trace
from rooflens.analyzers.trace.open_trace import open_trace

Kind = Literal["refused", "loaded", "crash"]


@dataclass(frozen=True)
class Outcome:
    seed: int
    kind: Kind
    mutations: tuple[str, ...]
    detail: str


# --- one case ---------------------------------------------------------------------------------


def write_case(base: Base, seed: int, folder: Path) -> tuple[Path, tuple[str, ...]]:
    """Write the damaged trace of `seed`; returns its path and the mutations applied."""
    rng = random.Random(seed)
    damage = Damage(base, rng)
    names: list[str] = []
    for mutate in rng.sample(DOCUMENT_MUTATIONS, rng.randint(1, 3)):
        mutate(damage)
        names.append(mutate.__name__)
    text = json.dumps(damage.doc, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
    for placeholder, raw in damage.raw.items():
        text = text.replace(f'"{placeholder}"', raw)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.25:
        byte_mutation = rng.choice(BYTE_MUTATIONS)
        data = byte_mutation(rng, data)
        names.append(byte_mutation.__name__)
    compressed = rng.random() < 0.3
    if compressed:
        data = gzip_damage(rng, data)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"fuzz_{seed}.json{'.gz' if compressed else ''}"
    path.write_bytes(data)
    return path, tuple(names)


def fuzz_case(base: Base, seed: int, folder: Path, platform: Platform | None) -> Outcome:
    path, names = write_case(base, seed, folder)
    try:
        problems = run_engine(path, folder / f"run_{seed}", platform)
    except TraceError as exc:
        return Outcome(seed, "refused", names, exc.problem)
    except Exception as exc:  # the fuzzer's purpose: any other exception is the finding
        where = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {exc} ({Path(where.filename).name}:{where.lineno})"
        return Outcome(seed, "crash", names, detail[:500])
    if problems:
        return Outcome(seed, "crash", names, "; ".join(problems)[:500])
    return Outcome(seed, "loaded", names, "")


def run_engine(path: Path, out: Path, platform: Platform | None) -> list[str]:
    """inspect, then open + report + files + model identification; broken rules, if any."""
    inspection = inspect_trace(path)
    report = build_report(open_trace(path), platform)
    write_perf_report(report, out, path.name, "gpu")
    model_identification(op_rows(report.sheets.get("unified_perf_summary")) or [])
    return list(_inspection_problems(inspection)) + list(_report_problems(report.sheets))


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
