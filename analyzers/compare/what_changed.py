"""What changed between two traces: names only one side has, operators that moved to other
kernels or libraries, shape and dtype changes, and the largest time changes with call sites.

See docs/compare.md#what-changed. Everything is read from the tree diff and the two perf
reports. The unit of comparison is the *compare unit* of a GPU event: its nearest operator both
traces share (`TreeDiff.lca`), so each kernel of either trace is counted once, under the same
operator on both sides. Time changes read trace 2 against trace 1: a regression is slower in
trace 2, an improvement faster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..perf.kernel_precision import kernel_library
from ..report.build import PerfReport
from ..report.stacks import NOT_FOUND
from ..trace.columns import MISSING
from .compare_columns import UNIFIED, row_kernels
from .diff_stats import column_at, module_columns
from .tree_diff import TreeDiff

NOISE_US = 1.0  # a time change must exceed this many µs ...
NOISE_FRACTION = 0.05  # ... and this share of the larger of the two times
NO_CALL_SITE = "root"  # no entry point and no enclosing nn.Module
# kernels that are not a library's compute: collectives and copies, named before the library
# (kernel_precision.kernel_library: one table of libraries, never the other vendor's)
_NON_LIBRARY = (("nccl", "NCCL/RCCL"), ("memcpy", "copy"), ("memset", "copy"))
# Composable Kernel's other spellings (a mangled `_ZN2ck`, `ck_moe_*`, `fmha_*`): a family here;
# the analysis labels them as TraceLens does (no library), so that table leaves them out
_CK = re.compile(r"fmha|\bck_|\bck::|_ZN2ck", re.IGNORECASE)
OTHER_FAMILY = "other"
# operators that issue collectives (c10d, NCCL/RCCL/Gloo wrappers, the profiler's record)
COLLECTIVE_OPS = re.compile(
    r"record_param_comms|^(c10d|nccl|rccl|gloo)[:_]|all_?reduce|all_?gather|all_?to_?all"
)
_NON_LIBRARY_PATTERNS = [(re.compile(p, re.IGNORECASE), family) for p, family in _NON_LIBRARY]


def kernel_family(name: str) -> str:
    """What a kernel name says it comes from: a collective, a copy, a library
    (kernel_precision.kernel_library), or "other"."""
    for pattern, family in _NON_LIBRARY_PATTERNS:
        if pattern.search(name):
            return family
    library = kernel_library(name)
    if library is None and _CK.search(name):
        return "CK"
    return library or OTHER_FAMILY


@dataclass(frozen=True)
class OnlyIn:
    """An operator or kernel name one trace has and the other has not."""

    name: str
    trace: int  # 1 or 2
    count: int
    time_us: float  # GPU kernel time, µs


@dataclass(frozen=True)
class KernelChange:
    """Instances of one shared operator whose kernels differ by name between the traces."""

    operator: str
    count: int
    kernels1: tuple[str, ...]  # distinct kernel names of one instance, in launch order
    kernels2: tuple[str, ...]
    time1_us: float
    time2_us: float

    @property
    def families1(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(kernel_family(k) for k in self.kernels1))

    @property
    def families2(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(kernel_family(k) for k in self.kernels2))

    @property
    def library_changed(self) -> bool:
        return set(self.families1) != set(self.families2)


@dataclass(frozen=True)
class ShapeChange:
    """Instances of a matched operator (same name on both sides) whose arguments differ."""

    operator: str
    count: int
    dims1: str | None
    dims2: str | None
    types1: str | None
    types2: str | None
    time1_us: float  # GPU time at or below the operator, µs
    time2_us: float


@dataclass(frozen=True)
class TimeChange:
    """A shared operator at one call site: trace-1 vs trace-2 GPU time, summed over instances."""

    operator: str
    call_site: str
    count: int
    time1_us: float
    time2_us: float

    @property
    def delta_us(self) -> float:
        return self.time2_us - self.time1_us

    @property
    def ratio(self) -> float:
        """Trace-2 time / trace-1 time (inf when trace 1 had none)."""
        return self.time2_us / self.time1_us if self.time1_us > 0 else float("inf")


@dataclass(frozen=True)
class WhatChanged:
    """The "what changed" section's data; every list is largest first."""

    operators_only: tuple[OnlyIn, ...]
    kernels_only: tuple[OnlyIn, ...]
    kernel_changes: tuple[KernelChange, ...]
    shape_changes: tuple[ShapeChange, ...]
    regressions: tuple[TimeChange, ...]  # slower in trace 2
    improvements: tuple[TimeChange, ...]  # faster in trace 2
    # False for jobs of different sizes: their collectives differ by construction, and the
    # headline comes from compute and structure
    collectives_headline: bool = True

    @property
    def top(self) -> TimeChange | None:
        """The largest time change above noise, either way (a collective only when the jobs
        are of one size)."""
        keep = [
            c
            for c in (*self.regressions, *self.improvements)
            if self.collectives_headline or not COLLECTIVE_OPS.search(c.operator)
        ]
        return max(keep, key=lambda c: abs(c.delta_us), default=None)

    def kernel_change_of(self, operator: str) -> KernelChange | None:
        """The largest kernel change recorded for `operator`, if any."""
        return next((c for c in self.kernel_changes if c.operator == operator), None)


def what_changed(
    diff: TreeDiff, report1: PerfReport, report2: PerfReport, *, collectives_headline: bool = True
) -> WhatChanged:
    """The section for trace 1 (`diff.tree1`, `report1`) against trace 2."""
    units = compare_units(diff)
    sites = _call_sites(diff, report1, report2, units)
    per = per_unit(units)
    regressions, improvements = time_changes(per, sites)
    return WhatChanged(
        operators_only=names_only(report1, report2, UNIFIED, "name"),
        kernels_only=names_only(report1, report2, "kernel_summary", "Kernel name"),
        kernel_changes=kernel_changes(per),
        shape_changes=shape_changes(diff),
        regressions=regressions,
        improvements=improvements,
        collectives_headline=collectives_headline,
    )


def compare_units(diff: TreeDiff) -> pd.DataFrame:
    """One row per GPU event of either trace under a shared operator: `unit` (its merged
    node), `name` (the unit's name), `trace` (1 or 2), `uid`, `kernel` and `dur` (µs)."""
    parts = []
    for trace, tree, mine in ((1, diff.tree1, diff.uid1), (2, diff.tree2, diff.uid2)):
        nodes = np.flatnonzero(mine != MISSING)
        nodes = nodes[tree.is_gpu[mine[nodes]]]
        unit = diff.lca[nodes]
        nodes, unit = nodes[unit != MISSING], unit[unit != MISSING]
        uids = mine[nodes]
        model = tree.model
        part = pd.DataFrame(
            {
                "unit": unit,
                "trace": trace,
                "uid": uids,
                "kernel": model.names[uids].astype(str),
                "dur": model.events["dur"].to_numpy()[uids].astype(float),
                "order": nodes,
            }
        )
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True).sort_values(["unit", "trace", "order"])
    names = {u: diff.name(u) for u in frame["unit"].unique().tolist()}
    frame["name"] = frame["unit"].map(names)
    return frame.drop(columns="order").reset_index(drop=True)


def per_unit(units: pd.DataFrame) -> pd.DataFrame:
    """Per unit (index): its name, and per trace the GPU time (`time1`, `time2`) and the
    distinct kernel names in launch order (`kernels1`, `kernels2`)."""
    time = units.groupby(["unit", "trace"], sort=True)["dur"].sum().unstack("trace")
    out = pd.DataFrame(index=time.index)
    out["name"] = units.groupby("unit", sort=True)["name"].first()
    seen: dict[tuple[int, int], dict[str, None]] = {}
    rows = zip(
        units["unit"].tolist(), units["trace"].tolist(), units["kernel"].tolist(), strict=True
    )
    for unit, trace, kernel in rows:  # one pass; a groupby lambda per unit is far slower
        seen.setdefault((unit, trace), {})[kernel] = None
    for trace in (1, 2):
        out[f"time{trace}"] = time.get(trace, pd.Series(0.0, index=out.index)).fillna(0.0)
        out[f"kernels{trace}"] = [tuple(seen.get((u, trace), ())) for u in out.index.tolist()]
    return out


def kernel_changes(per: pd.DataFrame) -> tuple[KernelChange, ...]:
    """Shared operators whose kernel names differ, grouped by (operator, kernels on each
    side); largest combined time first."""
    if per.empty:
        return ()
    per = per[[set(a) != set(b) for a, b in zip(per["kernels1"], per["kernels2"], strict=True)]]
    if per.empty:
        return ()
    keys = ["name", "kernels1", "kernels2"]
    grouped = per.groupby(keys, sort=False).agg(
        n=("time1", "size"), time1=("time1", "sum"), time2=("time2", "sum")
    )
    grouped = _largest_first(grouped.reset_index())
    return tuple(
        KernelChange(r.name, int(r.n), r.kernels1, r.kernels2, float(r.time1), float(r.time2))
        for r in grouped.itertuples(index=False)
    )


def time_changes(
    per: pd.DataFrame, sites: dict[int, str]
) -> tuple[tuple[TimeChange, ...], tuple[TimeChange, ...]]:
    """Per (operator, call site): summed time of its units on each side; the changes above
    noise split into regressions (largest increase first) and improvements (largest drop)."""
    if per.empty:
        return (), ()
    per["site"] = [sites.get(u, NO_CALL_SITE) for u in per.index.tolist()]
    grouped = per.groupby(["name", "site"], sort=False).agg(
        n=("time1", "size"), time1=("time1", "sum"), time2=("time2", "sum")
    )
    changes = [
        TimeChange(name, site, int(r.n), float(r.time1), float(r.time2))
        for (name, site), r in zip(grouped.index, grouped.itertuples(index=False), strict=True)
    ]
    changes = [c for c in changes if above_noise(c.time1_us, c.time2_us)]
    slower = sorted((c for c in changes if c.delta_us > 0), key=lambda c: -c.delta_us)
    faster = sorted((c for c in changes if c.delta_us < 0), key=lambda c: c.delta_us)
    return tuple(slower), tuple(faster)


def above_noise(time1: float, time2: float) -> bool:
    """Is the change from `time1` to `time2` more than run-to-run noise?"""
    delta = abs(time2 - time1)
    return delta > NOISE_US and delta > NOISE_FRACTION * max(time1, time2)


def _call_sites(
    diff: TreeDiff, report1: PerfReport, report2: PerfReport, units: pd.DataFrame
) -> dict[int, str]:
    """Per unit: the perf report's entry point of the first of its kernels that has one
    (trace 1's report first), else the unit operator's enclosing nn.Module stack."""
    entry = pd.concat(
        [
            _kernel_entry_points(report, units[units["trace"] == trace])
            for trace, report in ((1, report1), (2, report2))
        ]
    )
    found = entry[entry["entry"].notna() & (entry["entry"] != NOT_FOUND)]
    sites = found.groupby("unit", sort=False)["entry"].first().to_dict()
    every = units["unit"].unique().tolist()
    for tree, uid in ((diff.tree1, diff.uid1), (diff.tree2, diff.uid2)):
        left = np.asarray([u for u in every if u not in sites], dtype=np.int64)
        left = left[uid[left] != MISSING]
        stacks = module_columns(tree.model, uid[left])["nn_module_stack"]
        sites.update(zip(left.tolist(), stacks, strict=True))
    return sites


def _kernel_entry_points(report: PerfReport, units: pd.DataFrame) -> pd.DataFrame:
    """(unit, entry) for each of `units`' kernels that belongs to a row of the report."""
    summary = report.sheets.get(UNIFIED)
    if report.unified is None or summary is None or units.empty:
        return pd.DataFrame({"unit": [], "entry": []})
    rows = row_kernels(report.unified, summary).dropna().drop_duplicates("gpu")
    row_of = pd.Series(rows["row"].to_numpy(), index=rows["gpu"].to_numpy())
    row = row_of.reindex(units["uid"].to_numpy()).to_numpy()
    entries = summary["entry_point"].to_numpy(dtype=object)
    known = ~pd.isna(row)
    return pd.DataFrame(
        {"unit": units["unit"].to_numpy()[known], "entry": entries[row[known].astype(int)]}
    )


def shape_changes(diff: TreeDiff) -> tuple[ShapeChange, ...]:
    """Matched operators of the same name whose Input Dims or Input type differ, grouped by
    (operator, arguments on each side); largest combined GPU time first."""
    model1, model2 = diff.tree1.model, diff.tree2.model
    both = np.flatnonzero(diff.matched)
    both = both[diff.tree1.renamable[diff.uid1[both]]]
    one, two = diff.uid1[both], diff.uid2[both]
    same = model1.names[one].astype(str) == model2.names[two].astype(str)
    both, one, two = both[same], one[same], two[same]
    args = {
        "dims1": _texts(model1.events["input_dims"], one),
        "dims2": _texts(model2.events["input_dims"], two),
        "types1": _texts(model1.events["input_type"], one),
        "types2": _texts(model2.events["input_type"], two),
    }
    # compared as numpy object arrays: two missing cells (None) are equal
    differs = (args["dims1"] != args["dims2"]) | (args["types1"] != args["types2"])
    frame = pd.DataFrame(
        {
            "name": model1.names[one].astype(str),
            **args,
            "time1": subtree_times(diff, 1)[both],
            "time2": subtree_times(diff, 2)[both],
        }
    )[differs]
    if frame.empty:
        return ()
    keys = ["name", "dims1", "dims2", "types1", "types2"]
    grouped = frame.groupby(keys, sort=False, dropna=False).agg(
        n=("time1", "size"), time1=("time1", "sum"), time2=("time2", "sum")
    )
    grouped = _largest_first(grouped.reset_index())
    return tuple(
        ShapeChange(
            r.name,
            int(r.n),
            _text(r.dims1),
            _text(r.dims2),
            _text(r.types1),
            _text(r.types2),
            float(r.time1),
            float(r.time2),
        )
        for r in grouped.itertuples(index=False)
    )


def _largest_first(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows ordered by their combined trace-1 and trace-2 time, largest first (stable)."""
    order = np.argsort(-(frame["time1"] + frame["time2"]).to_numpy(), kind="stable")
    return frame.iloc[order]


def _texts(column: pd.Series, uids: np.ndarray) -> np.ndarray:
    """The argument cells at `uids` as text, None where missing (so two missing are equal)."""
    return np.asarray([_text(cell) for cell in column_at(column, uids)], dtype=object)


def _text(cell: object) -> str | None:
    return None if cell is None or (isinstance(cell, float) and np.isnan(cell)) else str(cell)


def subtree_times(diff: TreeDiff, trace: int) -> np.ndarray:
    """Per merged node: the summed duration (µs) of one trace's GPU events at or below it,
    added up level by level from the deepest."""
    tree, mine = (diff.tree1, diff.uid1) if trace == 1 else (diff.tree2, diff.uid2)
    dur = tree.model.events["dur"].to_numpy(dtype=float)
    gpu = (mine != MISSING) & tree.is_gpu[np.maximum(mine, 0)]
    total = np.where(gpu, dur[np.maximum(mine, 0)], 0.0)
    for level in range(int(diff.depth.max(initial=0)), 0, -1):
        nodes = np.flatnonzero(diff.depth == level)
        np.add.at(total, diff.parent[nodes], total[nodes])
    return total


def names_only(
    report1: PerfReport, report2: PerfReport, sheet: str, column: str
) -> tuple[OnlyIn, ...]:
    """Names of `column` in `sheet` that only one report has, with their count and GPU time;
    largest time first."""
    totals = [_name_totals(report, sheet, column) for report in (report1, report2)]
    found = []
    for trace, mine, other in ((1, totals[0], totals[1]), (2, totals[1], totals[0])):
        lone = mine[~mine.index.isin(other.index)]
        found += [OnlyIn(str(n), trace, int(c), float(t)) for n, c, t in lone.itertuples()]
    return tuple(sorted(found, key=lambda o: (-o.time_us, o.trace, o.name)))


# per sheet: the count and time columns a name is totalled over
_TOTALS = {
    UNIFIED: ("operation_count", "Kernel Time (µs)_sum"),
    "kernel_summary": ("Kernel duration (µs)_count", "Kernel duration (µs)_sum"),
}


def _name_totals(report: PerfReport, sheet: str, column: str) -> pd.DataFrame:
    frame = report.sheets.get(sheet)
    if frame is None or frame.empty:
        return pd.DataFrame({"count": [], "time": []})
    count, time = _TOTALS[sheet]
    grouped = frame.groupby(column, sort=False)
    return pd.DataFrame({"count": grouped[count].sum(), "time": grouped[time].sum()})
