"""The server's tool names, and how prose names a tool (to check the prompts name only those).

`TOOLS` is written by hand: test_mcp_tools checks it against the live server's tools/list.
"""

from __future__ import annotations

import re

TOOLS = {
    "list_platforms",
    "inspect_trace",
    "load_trace",
    "prepare_category_data",
    "run_category_analysis",
    "draft_findings",
    "submit_findings",
    "validate_findings",
    "aggregate_findings",
    "validate_run",
    "compose_report",
    "validate_report",
    "query_operations",
    "list_tables",
    "run_full_analysis",
    "get_model_identification_data",
    "submit_model_info",
    "render_performance_plot",
    "load_job",
    "get_job_overview",
    "what_if",
    "job_what_if",
    "compare_runs",
}

# A backticked snake_case word starting with one of these verbs reads as a tool name.
TOOL_VERBS = (
    "list|inspect|load|prepare|run|draft|submit|validate|aggregate|get|render|compose|query|compare"
)
TOOLISH = re.compile(rf"`((?:{TOOL_VERBS})_[a-z0-9_]+)`")
CALLED = re.compile(r"\b[Cc]all(?:s|ing)?\s+`([^`]+)`")
NOT_TOOLS = {"run_id", "compare_with"}
