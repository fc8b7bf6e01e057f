"""Which MCP tool runs each step of the pipeline (analyzers/pipeline/steps.py declares the
steps; the engine knows no tool names), and how a message names the call."""

from __future__ import annotations

from rooflens.analyzers.pipeline.steps import (
    AGGREGATED,
    ANALYSED,
    DRAFTED,
    LOADED,
    PREPARED,
    REPORTED,
    STEP_ORDER,
)

TOOL_OF_STEP = {
    LOADED: "load_trace",
    PREPARED: "prepare_category_data",
    ANALYSED: "run_category_analysis",
    DRAFTED: "draft_findings",
    AGGREGATED: "aggregate_findings",
    REPORTED: "compose_report",
}
assert tuple(TOOL_OF_STEP) == STEP_ORDER, "one tool per declared step, in order"


def step_call(step: str, run_id: str, category: str | None) -> str:
    """What to call to run `step` of run `run_id`: `call run_category_analysis(run_id='run-…',
    category='gemm')`; loading names its path argument."""
    tool = TOOL_OF_STEP[step]
    if step == LOADED:
        return f"call {tool}(path)"
    where = f", category={category!r}" if category else ""
    return f"call {tool}(run_id={run_id!r}{where})"
