"""What the golden tests share: the reference data folder, the trace of each reference
folder, the shared traces, TraceLens's unified rows decoded, our perf report of a
reference trace (built once per session) with the platform file its reference used, and the
comparative reference pairs with our whole comparative run of each.

Tests get the folder through the `shared` fixture (tests/conftest.py): it skips without the
folder and fails under CI. Parametrise over its contents with `when_shared`, so that a test
without the folder is reported as a skip (or a CI failure), never as an empty parameter set.
"""

from __future__ import annotations

import ast
import csv
import math
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from devkit.shared import REFERENCE_FOLDERS, REPO, shared_dir, trace_path
from rooflens.analyzers.compare.comparison import load_comparison
from rooflens.analyzers.perf.base import OpArgs
from rooflens.analyzers.perf.platforms import Platform, load_platform_file
from rooflens.analyzers.pipeline.folder import RunFolder
from rooflens.analyzers.pipeline.steps import AGGREGATED, LOADED, Pipeline, RunResults
from rooflens.analyzers.report.build import PerfReport, build_report
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.model import build_model
from rooflens.analyzers.trace.open_trace import open_trace

__all__ = [
    "REFERENCE_FOLDERS",
    "REPO",
    "ReferenceRow",
    "close",
    "our_report",
    "platform_for",
    "require_shared",
    "shared_dir",
    "shared_traces",
    "trace_id",
    "trace_path",
    "unified_rows",
    "when_shared",
]

NO_SHARED = "no-shared"  # the id of the placeholder parameter when the folder is absent
MISSING_IN_CI = "../shared is missing in CI: golden tests must run there"
MISSING = "../shared (reference traces) not found next to the repo; set ROOFLENS_SHARED"


def require_shared() -> Path:
    """The reference data folder; without it, skip the test, or fail it under CI (the CI
    variable set), where the golden comparisons must run."""
    found = shared_dir()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(MISSING_IN_CI)
        pytest.skip(MISSING)
    return found


def when_shared(values: Sequence[Any]) -> list[Any]:
    """`values`, or one placeholder parameter when the reference folder is absent: the test
    still runs its `shared` fixture, which skips (or fails under CI)."""
    return list(values) if shared_dir() is not None else [pytest.param(None, id=NO_SHARED)]


def shared_traces(pattern: str = "*.json.gz") -> list[Path]:
    """Every file under the reference folder's `traces/` matching `pattern` (sorted)."""
    shared = shared_dir()
    return sorted((shared / "traces").rglob(pattern)) if shared else []


def trace_id(path: Path | None) -> str:
    if path is None:
        return NO_SHARED
    return str(path.relative_to(path.parents[2])) if len(path.parents) > 2 else path.name


# --- our perf report of a reference trace -------------------------------------------------

# reference README table: which platform file each reference folder was produced with
PLATFORM_FILE = {"h100": "H100.json", "b200": "B200.json", "torch": "H100.json"}


def platform_for(shared: Path, folder: str) -> Platform:
    name = PLATFORM_FILE.get(folder.split("_")[0], "MI300X.json")
    return load_platform_file(shared / "reference/tracelens/platforms" / name)


@cache
def our_report(folder: str) -> PerfReport:
    """Our perf report of a reference folder's trace, on the platform its reference used."""
    shared = shared_dir()
    assert shared is not None
    model = build_model(load_trace(trace_path(shared, folder)))
    return build_report(model, platform_for(shared, folder))


def close(a: float, b: float, rel: float = 5e-3) -> bool:
    if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return False
    return abs(a - b) <= rel * max(abs(a), abs(b)) + 1e-9


# --- TraceLens's unified_perf_summary rows ------------------------------------------------
# The reference writes Python reprs ("((8944, 1024), (1024, 2816))"); tests read them with
# `ast.literal_eval` (the product never evaluates trace strings).


@dataclass(frozen=True)
class ReferenceRow:
    folder: str
    row: dict[str, str]
    args: OpArgs

    def number(self, column: str) -> float:
        text = self.row.get(column, "")
        return float(text) if text not in ("", "nan") else math.nan

    @property
    def perf_params(self) -> dict[str, Any] | None:
        text = self.row.get("perf_params", "")
        return ast.literal_eval(text) if text and text != "None" else None


def _literal(text: str) -> tuple[Any, ...]:
    if not text:
        return ()
    value = ast.literal_eval(text)
    return tuple(value) if isinstance(value, list | tuple) else ()


def unified_rows(shared: Path, folder: str | None = None) -> Iterator[ReferenceRow]:
    """Every unified_perf_summary row of every reference folder (or of one folder)."""
    base = shared / "reference/tracelens"
    folders = [folder] if folder else sorted(p.name for p in base.iterdir() if p.is_dir())
    for name in folders:
        path = base / name / "perf_report_csvs/unified_perf_summary.csv"
        if not path.exists():
            continue
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                args = OpArgs(
                    name=row["name"],
                    dims=_literal(row["Input Dims"]),
                    types=tuple(str(t) for t in _literal(row["Input type"])),
                    strides=_literal(row["Input Strides"]),
                    concrete=tuple(str(c) for c in _literal(row["Concrete Inputs"])),
                )
                yield ReferenceRow(folder=name, row=row, args=args)


COMPARATIVE_UNIT_CASES = [  # traces/comparative_units/<case>/trace{1,2}.json
    "test01_moe_fused_vs_unfused",
    "test02_attention_both_unfused",
    "test03_attention_fused_vs_unfused",
    "test04_gemm_mm_vs_linear",
    "test05_gemm_identical_runtime_roofline",
    "test06_conv_gap_exceeds_roofline",
]


# --- the comparative reference pairs (reference/tracelens_compare/) ---------------------------

COMPARE = "reference/tracelens_compare"
PAIRS = [  # the model pairs: MI300X trace 1 against H100 trace 2
    "gaunernst_bert-small-uncased__1016001",
    "Falconsai_nsfw_image_detection__1016002",
    "facebook_timesformer-base-finetuned-k400__1016002",
    "Qwen_Qwen1.5-0.5B-Chat__1016005",
    "google_owlv2-large-patch14-ensemble__1016001",
]
MODEL_FOLDERS = [f"mi300_vs_h100_{m}" for m in PAIRS]
UNIT_FOLDERS = [f"unit_{case}" for case in COMPARATIVE_UNIT_CASES]
FOLDERS = UNIT_FOLDERS + MODEL_FOLDERS


def pair_paths(folder: str) -> tuple[Path, Path, Path]:
    """Trace 1, trace 2 and TraceLens's trace-1 CSV folder of a reference pair folder."""
    shared = shared_dir()
    assert shared is not None
    csvs = shared / COMPARE / folder / "perf_report_trace1_csvs"
    if folder.startswith("unit_"):
        traces = shared / "traces/comparative_units" / folder.removeprefix("unit_")
        return traces / "trace1.json", traces / "trace2.json", csvs
    model = folder.removeprefix("mi300_vs_h100_")
    return (
        shared / f"traces/mi300/{model}.json.gz",
        shared / f"traces/h100/{model}.json.gz",
        csvs,
    )


def reference_dir(folder: str) -> Path:
    shared = shared_dir()
    assert shared is not None
    return shared / COMPARE / folder


@cache
def comparative_run(folder: str) -> tuple[Path, Pipeline]:
    """Our comparative run of a reference pair, prepared, analysed and aggregated, written
    into a temporary run folder (returned with its pipeline)."""
    shared = shared_dir()
    assert shared is not None
    one, two, _ = pair_paths(folder)
    platform1 = platform_for(shared, "mi300")
    model1 = open_trace(one)
    report1 = build_report(model1, platform1)
    platforms = shared / "reference/tracelens/platforms"
    comparison = load_comparison(model1, report1, two, platform_file=platforms / "H100.json")
    out = Path(tempfile.mkdtemp(prefix=f"rooflens-{folder[:40]}-"))
    steps = [LOADED]
    results = RunResults(model1, report1, platform1, str(one), str(out), comparison=comparison)
    pipeline = Pipeline(
        results,
        RunFolder(out),
        done=lambda step: step in steps,
        mark=lambda *done: steps.extend(done),
        label=folder,
    )
    RunFolder(out).write_comparison(comparison)
    pipeline.run(AGGREGATED)
    return out, pipeline
