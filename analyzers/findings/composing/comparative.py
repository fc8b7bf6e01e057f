"""The comparative parts of the report: trace 1 against trace 2
(docs/analysis.md#comparative-report).

Trace 1 is the run being optimised, trace 2 the reference. Every difference the report writes
is trace 1 minus trace 2, labelled as such, so a positive time difference is time trace 1
could recover. Trace 2's figures come from the manifest (`trace2_gpu_utilization`,
`trace2_ops_summary_by_category`) when it carries them, else from trace 2's own perf report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ...markdown_text import md_code
from ...perf.categories import default_table
from ...prepare.categories import GpuUtilization, normalise_category
from ...prepare.manifest import Manifest

if TYPE_CHECKING:
    from ...compare.comparability import Comparability
    from ...compare.comparison import Comparison
    from ..drafting.system_compare import SystemComparison


@dataclass(frozen=True)
class ReportComparison:
    """What the report needs of trace 2: its platform, its GPU utilisation, its kernel time
    per category (lower-case category key -> ms), the What changed section (markdown), its
    headline sentence and the display names of its category keys (key -> name as the perf
    report writes it, `GEMM` for `gemm`)."""

    platform2: str | None
    utilization2: GpuUtilization
    category_ms2: Mapping[str, float] = field(default_factory=dict)
    what_changed: str | None = None
    headline: str | None = None
    names2: Mapping[str, str] = field(default_factory=dict)
    system: SystemComparison | None = None  # both traces' system figures, when analysed
    comparability: Comparability | None = None

    @classmethod
    def of(
        cls, manifest: Manifest, comparison: Comparison | None, platform2: str | None = None
    ) -> ReportComparison | None:
        """The comparison of a comparative run, from its manifest (trace 2's utilisation and
        category times) and its `Comparison` (platform, What changed); None for a standalone
        run. `platform2` names trace 2's platform when there is no Comparison to read."""
        util2 = manifest.trace2_gpu_utilization
        if manifest.comparison_scope != "comparative" or util2 is None:
            return None
        section = headline = None
        labels: list[object] = []
        if comparison is not None:
            from ...compare.what_changed_md import (
                headline as first_sentence,
            )
            from ...compare.what_changed_md import what_changed_markdown

            section = what_changed_markdown(comparison.what_changed)
            headline = first_sentence(comparison.what_changed)
            if comparison.platform is not None:
                platform2 = comparison.platform.name
            unified = comparison.report.sheets.get("unified_perf_summary")
            if unified is not None and "op category" in unified:
                labels = list(unified["op category"].dropna().unique())
        rows = manifest.trace2_ops_summary_by_category or []
        names = category_names(labels)
        alike = comparison.comparability if comparison is not None else None
        return cls(
            platform2, util2, category_times(rows), section, headline, names, comparability=alike
        )

    def time2(self, category: str) -> float | None:
        return self.category_ms2.get(category.lower())

    def display2(self, key: str) -> str:
        """The display name of one of trace 2's category keys (the key itself when no label
        is known for it)."""
        return self.names2.get(key.lower()) or category_names().get(key.lower(), key)


def category_names(labels: list[object] | None = None) -> dict[str, str]:
    """Category key -> display name, for every category the packaged table names and, over
    those, the `op category` labels given (trace 2's own, a user table's included)."""
    known = [*default_table().categories(), *(labels or ())]
    return dict(normalise_category(label) for label in known)


def category_times(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Trace 2's direct kernel time per op category, keyed lower-case (the spec matches the
    manifest's category names case-insensitively)."""
    out: defaultdict[str, float] = defaultdict(float)
    for row in map(CategoryTime.model_validate, rows):
        if row.category is not None and row.ms is not None:
            out[row.category.lower()] += row.ms
    return dict(out)


class CategoryTime(BaseModel):
    """The two fields of a row of trace 2's `ops_summary_by_category` this report reads."""

    model_config = ConfigDict(extra="ignore")

    category: str | None = Field(default=None, alias="op category")
    ms: float | None = Field(default=None, alias="total_direct_kernel_time_ms")


def title(model: str, platform1: str | None, comparison: ReportComparison) -> str:
    """The comparative heading; `model` is Markdown already, the platforms' names (maybe a
    user's file) become code spans."""
    one = md_code(platform1) if platform1 else "unknown platform"
    two = md_code(comparison.platform2) if comparison.platform2 else "unknown platform"
    return f"# {model} - Comparative Analysis: {one} vs {two}"
