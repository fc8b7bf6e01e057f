"""`kernel_details_summary` and `trunc_kernel_details` of a group of op instances.

See docs/report-tables.md#kernel-details.

Kernels are aligned by launch position across the instances of a group, taking the first
instance with kernels as the template; instances with another kernel count are left out (as
TraceLens does; grouping by `num_kernels` avoids it). Values stay structured (lists of
dicts); the writers render them as JSON.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

TRUNCATE_AT = 64
STAT_COLUMNS = (
    "count",
    "total_duration_us",
    "mean_duration_us",
    "median_duration_us",
    "std_dev_duration_us",
    "min_duration_us",
    "max_duration_us",
)


def kernel_summaries(kernels: pd.DataFrame) -> dict[int, list[dict[str, Any]]]:
    """Per group id, the per-position kernel statistics, ascending by total duration.

    `kernels` has one row per kernel with columns `group`, `instance`, `ts`, `name`,
    `stream`, `dur`; instances are taken in order of their first kernel's `ts`.
    """
    if kernels.empty:
        return {}
    first_ts = kernels.groupby("instance")["ts"].transform("min")
    k = kernels.assign(first_ts=first_ts)
    k = k.sort_values(["group", "first_ts", "instance", "ts"], kind="stable")
    k = k.assign(position=k.groupby("instance").cumcount())
    sizes = k.groupby("instance")["position"].transform("size")
    first_instance = k.groupby("group")["instance"].transform("first")
    template_size = (
        sizes.where(k["instance"] == first_instance).groupby(k["group"]).transform("max")
    )
    k = k[(sizes == template_size).to_numpy()]
    grouped = k.groupby(["group", "position"], sort=True)
    dur = grouped["dur"]
    stats = pd.DataFrame(
        {
            "name": grouped["name"].first().astype(str),
            "stream": grouped["stream"].first(),
            "count": dur.size(),
            "total_duration_us": dur.sum(),
            "mean_duration_us": dur.mean(),
            "median_duration_us": dur.median(),
            "std_dev_duration_us": dur.std(ddof=0),
            "min_duration_us": dur.min(),
            "max_duration_us": dur.max(),
        }
    ).reset_index()
    stats = stats.sort_values(["group", "total_duration_us"], kind="stable")
    records = stats.to_dict("records")  # one C-level conversion, not a row-by-row pandas walk
    out: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        out.setdefault(int(record.pop("group")), []).append(_record(record))
    return out


def _record(row: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"name": row["name"], "stream": int(row["stream"])}
    for column in STAT_COLUMNS:
        value = row[column]
        record[column] = int(value) if column == "count" else float(value)
    return record


def truncate(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Short form for people: names cut to 64 characters, mean duration to 2 decimals."""
    return [
        {
            "name": s["name"] if len(s["name"]) <= TRUNCATE_AT else s["name"][:TRUNCATE_AT] + "...",
            "stream": s["stream"],
            "mean_duration_us": round(s["mean_duration_us"], 2),
        }
        for s in summary
    ]


def group_ids(frame: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Dense group id per row over `keys` (missing values form their own group)."""
    return frame.groupby(keys, sort=False, dropna=False, observed=True).ngroup().to_numpy()
