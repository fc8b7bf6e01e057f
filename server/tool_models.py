"""Pydantic results of the MCP tools: bounded, with paths to the big artifacts."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from rooflens.analyzers.perf.platforms import PlatformSummary


class PlatformList(BaseModel):
    platforms: list[PlatformSummary]


class Warning_(BaseModel):
    code: str
    severity: str
    message: str


class GpuRow(BaseModel):
    type: str
    time_ms: float
    percent: float


class LoadResult(BaseModel):
    run_id: str
    platform: str | None = Field(description="platform scored against; None = no roofline")
    platform_source: str
    gpu: str
    gpu_utilisation: list[GpuRow]
    health_warnings: list[Warning_]
    roofline_coverage_percent: float | None
    notes: list[str]
    output_dir: str
    csv_folder: str
    xlsx: str
    resources: list[str] = Field(
        default_factory=list, description="rooflens:// URIs of the big artifacts to read"
    )
    next_step: str = "prepare_category_data(run_id)"


class CategorySummary(BaseModel):
    name: str
    tier: str
    ops_count: int
    gpu_kernel_time_ms: float | None
    analysable: bool = Field(description="run_category_analysis accepts this category")


class PrepareResult(BaseModel):
    run_id: str
    category_data: str
    categories: list[CategorySummary]
    next_step: str = "run_category_analysis(run_id, category) for each analysable category"


class AnalysisResultModel(BaseModel):
    run_id: str
    category: str
    status: str
    findings: int
    metrics_file: str


class DraftResult(BaseModel):
    run_id: str
    category: str
    path: str
    text: str = Field(description="the drafted Markdown, cut at 12000 characters")
    truncated: bool


class SubmitResult(BaseModel):
    run_id: str
    category: str
    path: str


class ProblemModel(BaseModel):
    rule: str
    line: int | None
    message: str


class ValidationResult(BaseModel):
    run_id: str
    target: str
    valid: bool
    problems: list[ProblemModel]


class PriorityRow(BaseModel):
    rank: int
    category: str
    display_name: str
    impact_score: float | None = Field(description="estimated saving, % of end-to-end GPU time")


class AggregateResult(BaseModel):
    run_id: str
    path: str
    baseline_ms: float | None
    priorities: list[PriorityRow]
    failed_categories: list[str]


class RunCheck(BaseModel):
    name: str
    status: str
    messages: list[str]


class RunValidationResult(BaseModel):
    run_id: str
    checks: list[RunCheck]


class ReportResult(BaseModel):
    run_id: str
    report: str
    plot: str | None
    model: str | None
    problems: list[ProblemModel]
    resources: list[str] = Field(
        default_factory=list, description="rooflens:// URIs of the report, plot and priorities"
    )


class OperationsPage(BaseModel):
    run_id: str
    total: int
    offset: int
    rows: list[dict[str, Any]]
    has_more: bool


class FullAnalysisResult(BaseModel):
    load: LoadResult
    categories: list[AnalysisResultModel]
    priorities: list[PriorityRow]
    report: ReportResult
