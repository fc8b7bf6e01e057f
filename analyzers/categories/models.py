"""One compute category's `<key>_metrics.json` (docs/analysis.md#compute-categories)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from ..prepare.document_base import ComparisonScope
from .precision_mix import SimtKernel

# how a metrics document ended: scored, failed, or no operation of its category in the trace
MetricsStatus = Literal["OK", "ERROR", "NO_DATA"]


class Efficiency(BaseModel):
    """How close one operation came to its roof (standalone: `Pct Roofline_mean`)."""

    model_config = ConfigDict(frozen=True)

    tflops_achieved: float | None = None
    tb_s_achieved: float | None = None
    efficiency_percent: float | None = None
    bound_type: Literal["compute", "memory"] | None = None
    flops_per_byte: float | None = None
    compute_spec: str | None = None
    resolved_peak_maf: int | float | None = None
    resolved_peak_hbm_bw: int | float | None = None
    warning: str | None = None
    is_anomaly: bool = False


class Operation(BaseModel):
    """One row of the category CSV. The optional fields (some under TraceLens headers such as
    `Input Dims`) are written only when scoring set them: a field never set is left out of
    the document, one set to None is written as null."""

    model_config = ConfigDict(frozen=True, validate_by_name=True, serialize_by_alias=True)

    name: str
    count: int
    time_ms: float
    percent_of_category: float
    percent_of_total: float | None
    efficiency: Efficiency
    efficiency_warning: str | None = None
    unmodelled_reason: str | None = None  # why the perf report has no model for the row
    # the category's own columns as the table holds them (structured cells parsed)
    input_dims: JsonValue = Field(None, alias="Input Dims")
    input_type: JsonValue = Field(None, alias="Input type")
    flops_per_byte: JsonValue = Field(None, alias="FLOPS/Byte")
    has_perf_model: JsonValue = None
    perf_params: JsonValue = None
    kernel_details_summary: JsonValue = None
    args: str | None = None
    # comparative (categories/comparative.py): trace 2's time for the row's own work (its
    # share of its common ancestors' trace-2 time, by the one ratio), the ancestors' operator
    # count, trace 2 minus trace 1, and the ancestors' whole trace-2 time
    t2_time_ms: float | None = None
    count_trace2: int | None = None
    difference_ms: float | None = None
    lca_trace2_time_ms: float | None = None
    cov: float | None = None
    high_variance: bool | None = None
    classification: dict[str, JsonValue] | None = None  # the category's per-row classifier
    library: str | None = None
    fusion_flagged: bool | None = None
    fusion_candidate_name: str | None = None
    launcher_path: str | None = None
    kernel_name: str | None = None
    kernel_name_trunc: str | None = None
    module_chain: list[str] | None = None
    call_chain: list[str] | None = None

    @model_serializer(mode="wrap")
    def _set_fields_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        unset = {
            field.alias or name
            for name, field in type(self).model_fields.items()
            if not field.is_required() and name not in self.model_fields_set
        }
        return {k: v for k, v in data.items() if k not in unset}


class ImpactEstimate(BaseModel):
    """Estimated saving of one op, in % of E2E GPU time (docs/analysis.md#impact-estimates)."""

    model_config = ConfigDict(frozen=True)

    operation: str
    category: str
    type: Literal["kernel_tuning", "unmodeled_significant"]
    estimate_method: Literal["quantified", "heuristic"]
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    efficiency_pct: float | None
    bound_type: Literal["compute", "memory"] | None
    library: str | None
    time_ms: float
    percent_of_total: float | None = None

    def document(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        if self.estimate_method == "quantified":
            data.pop("percent_of_total")
        return data


class Finding(BaseModel):
    """One P-item group (docs/analysis.md#p-item-findings); scores are sums over the members."""

    model_config = ConfigDict(frozen=True)

    rank: int
    bound_type: Literal["compute", "memory", "unknown", "unmodeled"]
    library: str
    eff_bucket: Literal["0-30", "30-60", "60-100", "unknown", "all"]
    estimate_method: Literal["quantified", "heuristic"]
    impact_score: float
    impact_score_low: float
    impact_score_high: float
    percent_of_total: float | None = None
    member_count: int
    members: tuple[ImpactEstimate, ...]

    def document(self) -> dict[str, Any]:
        data = self.model_dump(mode="json", exclude={"members", "rank"})
        if self.estimate_method == "quantified":
            data.pop("percent_of_total")
        data["members"] = [m.document() for m in self.members]
        data["rank"] = self.rank
        return data


class CategoryMetrics(BaseModel):
    """The whole document. ERROR carries `error`, NO_DATA a `message` and no estimates."""

    model_config = ConfigDict(frozen=True)

    category: str
    status: MetricsStatus
    comparison_scope: ComparisonScope = "standalone"
    error: str | None = None
    message: str | None = None
    total_time_ms: float | None = None
    percent_of_compute: float | None = None
    percent_of_total: float | None = None
    operation_count: int | None = None
    operations: tuple[Operation, ...] | None = None
    category_specific: dict[str, Any] | None = None
    impact_estimates: tuple[ImpactEstimate, ...] | None = None
    category_findings: tuple[Finding, ...] | None = None
    # fp32/fp64 matrix kernels without matrix units in rows without a roofline (precision_mix)
    simt_kernels: tuple[SimtKernel, ...] | None = None

    def with_specific(self, **values: Any) -> CategoryMetrics:
        """A copy with `values` appended to `category_specific`."""
        return self.model_copy(
            update={"category_specific": {**(self.category_specific or {}), **values}}
        )

    def document(self) -> dict[str, Any]:
        """The JSON document: top-level keys that do not apply are left out, nested nulls kept."""
        data: dict[str, Any] = {"category": self.category, "status": self.status}
        if self.status == "ERROR":
            return {**data, "error": self.error, "comparison_scope": self.comparison_scope}
        data["comparison_scope"] = self.comparison_scope
        if self.message is not None:
            data["message"] = self.message
        data |= {
            "total_time_ms": self.total_time_ms,
            "percent_of_compute": self.percent_of_compute,
            "percent_of_total": self.percent_of_total,
            "operation_count": self.operation_count,
            "operations": [op.model_dump(mode="json") for op in self.operations or ()],
            "category_specific": self.category_specific or {},
        }
        if self.impact_estimates is not None:
            data["impact_estimates"] = [e.document() for e in self.impact_estimates]
        if self.category_findings is not None:
            data["category_findings"] = [f.document() for f in self.category_findings]
        if self.simt_kernels:
            data["simt_kernels"] = [k.model_dump(mode="json") for k in self.simt_kernels]
        return data


def error_metrics(category: str, error: str) -> CategoryMetrics:
    return CategoryMetrics(category=category, status="ERROR", error=error)


def no_data_metrics(category: str, message: str) -> CategoryMetrics:
    return CategoryMetrics(
        category=category,
        status="NO_DATA",
        message=message,
        total_time_ms=0,
        percent_of_compute=0,
        percent_of_total=0,
        operation_count=0,
        operations=(),
        category_specific={},
    )
