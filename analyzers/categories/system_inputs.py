"""Shared inputs and output of the system analyses: the GPU timeline and atomic writing.

The GPU timeline is read from `<csvdir>/gpu_timeline.csv` when the run folder holds one
(csvdir = `perf_report_trace1_csvs` for a comparative manifest, else `perf_report_csvs`),
otherwise from the manifest's `gpu_utilization` (total and percents; a row's time is
percent x total / 100). The manifest has no `total_comm_time` / `total_memcpy_time` rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, SerializerFunctionWrapHandler, model_serializer

from rooflens.analyzers.report.write_csv import atomic_write_bytes

CATEGORY_DATA = "category_data"
MANIFEST = "category_manifest.json"

# manifest gpu_utilization percent key -> gpu_timeline row type
_MANIFEST_ROWS = {
    "computation_time_percent": "computation_time",
    "exposed_comm_time_percent": "exposed_comm_time",
    "exposed_memcpy_time_percent": "exposed_memcpy_time",
    "idle_time_percent": "idle_time",
}


class TimelineError(Exception):
    """The run folder has no usable GPU timeline."""


class Timeline(BaseModel):
    """gpu_timeline rows: type -> time in ms and percent of total."""

    time_ms: dict[str, float]
    percent: dict[str, float]

    @property
    def total_ms(self) -> float:
        return self.time_ms["total_time"]


class OmitNone(BaseModel):
    """Serialises without the keys whose value is None (raw nested dicts are left alone)."""

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / CATEGORY_DATA / MANIFEST
    if not path.is_file():
        raise TimelineError(f"{CATEGORY_DATA}/{MANIFEST} not found - run `rooflens analyze` first")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TimelineError(f"{CATEGORY_DATA}/{MANIFEST} unreadable: {exc}") from exc
    if not isinstance(data, dict):
        raise TimelineError(f"{CATEGORY_DATA}/{MANIFEST} is not a JSON object")
    return data


def _csv_timeline(path: Path) -> Timeline:
    try:
        frame = pd.read_csv(path)
        types = frame["type"].astype(str)
        times = dict(zip(types, frame["time ms"].astype(float), strict=True))
        pcts = dict(zip(types, frame["percent"].astype(float), strict=True))
    except (OSError, ValueError, KeyError) as exc:
        raise TimelineError(f"{path.name} unreadable: {exc}") from exc
    if "total_time" not in times:
        raise TimelineError(f"{path.name} has no total_time row")
    return Timeline(time_ms=times, percent=pcts)


def _manifest_timeline(manifest: dict[str, Any]) -> Timeline:
    util = manifest.get("gpu_utilization")
    if not isinstance(util, dict) or not isinstance(util.get("total_time_ms"), int | float):
        raise TimelineError("category_manifest.json has no gpu_utilization.total_time_ms")
    total = float(util["total_time_ms"])
    times = {"total_time": total}
    pcts = {"total_time": 100.0}
    for key, row in _MANIFEST_ROWS.items():
        value = util.get(key)
        if isinstance(value, int | float):
            pcts[row] = float(value)
            times[row] = float(value) * total / 100.0
    return Timeline(time_ms=times, percent=pcts)


def read_timeline(run_dir: Path, manifest: dict[str, Any] | None = None) -> Timeline:
    """The run's GPU timeline (CSV first, else the manifest); TimelineError when neither."""
    problem: TimelineError | None = None
    if manifest is None:
        try:
            manifest = read_manifest(run_dir)
        except TimelineError as exc:
            manifest, problem = {}, exc
    comparative = manifest.get("comparison_scope") == "comparative"
    csv_dir = "perf_report_trace1_csvs" if comparative else "perf_report_csvs"
    csv = run_dir / csv_dir / "gpu_timeline.csv"
    if csv.is_file():
        return _csv_timeline(csv)
    if not manifest:
        raise TimelineError(f"no {csv_dir}/gpu_timeline.csv and {problem}")
    return _manifest_timeline(manifest)


def write_metrics(path: Path, model: BaseModel) -> None:
    """Write a system metrics document as indented JSON, atomically."""
    text = json.dumps(model.model_dump(mode="json"), indent=2) + "\n"
    atomic_write_bytes(Path(path), text.encode("utf-8"))
