"""The run's JSON documents as the run checks read them back: lenient views.

The checks diagnose a run folder, hand-edited or half-written ones included, so these views
take any document of the right shape: every key is optional and the others are ignored, a
number that is not one reads as None (as the checks always treated it), and the values a check
compares or quotes (ranks, names, methods) are kept as written. Only a document of the wrong
shape (an object where a list belongs, a list where an object does) does not read; `read_view`
then says where, in one line, for the check's own message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    JsonValue,
    ValidationError,
    model_validator,
)

from ..contract.validate import MetricsCells, OperationCells, first_error
from ..ranking.priorities import current_layout, earlier_layout


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _empty_if_falsy(value: Any) -> Any:
    return value or {}


Number = Annotated[float | None, BeforeValidator(_number)]


class View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class GpuView(View):
    total_time_ms: Number = None
    computation_time_percent: Number = None


class CategoryView(View):
    name: JsonValue = None
    tier: JsonValue = None
    gpu_kernel_time_ms: Number = None


class ManifestView(View):
    """`category_manifest.json`: the window's GPU time and the categories."""

    comparison_scope: JsonValue = None
    gpu_utilization: Annotated[GpuView, BeforeValidator(_empty_if_falsy)] = GpuView()
    categories: list[CategoryView] | None = None


class EfficiencyView(View):
    efficiency_percent: Number = None
    is_anomaly: JsonValue = None
    warning: JsonValue = None


class OperationView(OperationCells):
    name: JsonValue = None
    time_ms: Number = None
    efficiency: Annotated[EfficiencyView, BeforeValidator(_empty_if_falsy)] = EfficiencyView()


class EstimateView(View):
    operation: JsonValue = None
    time_ms: Number = None
    estimate_method: JsonValue = None


class MetricsView(MetricsCells):
    """`<key>_metrics.json`: its scope, operations and impact estimates."""

    category: JsonValue = None
    comparison_scope: JsonValue = "standalone"
    operations: list[OperationView] | None = None
    impact_estimates: list[EstimateView] | None = None


class SavingView(View):
    low_ms: Number = None
    mid_ms: Number = None
    high_ms: Number = None
    cap_ms: Number = None


class ItemView(View):
    """One entry of `priorities` (the P-numbered ranking)."""

    p_number: JsonValue = None
    estimate_method: JsonValue = None
    saving: SavingView | None = None
    percent_mid: Number = None
    unquantified_reason: JsonValue = None


class TotalsView(View):
    mid_ms: Number = None
    by_pool_mid_ms: dict[str, Number] | None = None
    pool_ms: dict[str, Number] | None = None


class RankedFindingView(View):
    category: JsonValue = None
    impact_score: Number = None
    global_rank: JsonValue = None
    estimate_method: JsonValue = None


class TopOperationView(View):
    rank: JsonValue = None
    category: JsonValue = None
    impact_score: Number = None
    source: JsonValue = None


class ComputeView(View):
    """`tracelens_compute`: TraceLens's compute-only lists."""

    findings: list[RankedFindingView] | None = None
    priorities: list[TopOperationView] | None = None


class PriorityView(View):
    """`priority_data.json`, read in the current layout; `earlier` says it was written in the
    earlier one (the ranking under `items`, TraceLens's lists at the top)."""

    earlier: bool = False
    baseline_ms: Number = None
    priorities: list[ItemView] | None = None
    saving_totals: TotalsView | None = None
    tracelens_compute: ComputeView | None = None

    @model_validator(mode="before")
    @classmethod
    def _current_layout(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {**current_layout(data), "earlier": earlier_layout(data)}


V = TypeVar("V", bound=BaseModel)


def read_view(path: Path, view: type[V]) -> tuple[V | None, str | None]:
    """(the document read as `view`, None) or (None, why not: "not found" or one line)."""
    try:
        return view.model_validate_json(path.read_bytes()), None
    except FileNotFoundError:
        return None, "not found"
    except OSError as exc:
        return None, f"unreadable ({exc})"
    except ValidationError as exc:
        return None, f"does not match its model ({first_error(exc)})"
