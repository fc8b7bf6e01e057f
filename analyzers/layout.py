"""Where every artifact of a run lives, relative to its folder (docs/run-folder.md).

One name per artifact; the stages never build these paths themselves. Only
`analyzers.pipeline.folder` reads and writes them; validators and resources look them up here.
"""

from __future__ import annotations

RUN_FILE = "run.json"
PERF_CSVS = "perf_report_csvs"
WORKBOOK = "perf_report.xlsx"
CATEGORY_DATA = "category_data"
METADATA = "metadata"

MANIFEST = f"{CATEGORY_DATA}/category_manifest.json"
MULTI_KERNEL_DATA = f"{CATEGORY_DATA}/multi_kernel_data.json"
FUSION_CANDIDATES = f"{CATEGORY_DATA}/fusion_candidates.json"
PRIORITIES = "priority_data.json"
PLOT = "perf_improvement.png"
PLOT_BASE64 = "perf_improvement_base64.txt"
REPORT = "analysis.md"
REPORT_HTML = "analysis.html"  # the report as one page, from the same data (composing/html_*)
ANNOTATED_TRACE = "annotated_trace.json.gz"  # the trace with the findings' tracks added
REPORT_PROSE = "report_prose.json"
SUBMITTED_MODEL = "model_info.json"  # what a model submitted; wins over the inference
MODEL_INFO = f"{METADATA}/model_info.json"
NN_MODULES = f"{METADATA}/nn_modules.txt"
CONDENSED_OPS = f"{METADATA}/condensed_op_info.csv"

# A comparative run (docs/compare.md#the-run-folder-of-a-comparison): trace 1's tables with the
# comparison columns and diff_stats, trace 2's own tables, trace 2's timeline figures.
TRACE1_CSVS = "perf_report_trace1_csvs"
TRACE2_CSVS = "perf_report_trace2_csvs"
DIFF_STATS = f"{TRACE1_CSVS}/diff_stats.csv"

# `--format parquet` (docs/run-folder.md#parquet-tables): the same tables, typed, beside the CSVs.
PERF_PARQUET = "perf_report_parquet"
TRACE1_PARQUET = "perf_report_trace1_parquet"
TRACE2_PARQUET = "perf_report_trace2_parquet"
TRACE2_UTILIZATION = f"{METADATA}/trace2_gpu_utilization.json"


def trace2_metrics(key: str) -> str:
    """Trace 2's own system document (docs/compare.md#system-analyses-of-both-traces)."""
    return f"{METADATA}/trace2_{key}_metrics.json"


# The analyses that look at the whole run rather than one category of operators, in the order
# they run. The first two read the timeline (and run on trace 2 of a comparison too); their
# findings are the system tier. Fusion reads kernel sequences and is a tier of its own.
CPU_IDLE, MULTI_KERNEL, KERNEL_FUSION = "cpu_idle", "multi_kernel", "kernel_fusion"
SYSTEM_KEYS = (CPU_IDLE, MULTI_KERNEL, KERNEL_FUSION)
TIMELINE_SYSTEM_KEYS = (CPU_IDLE, MULTI_KERNEL)


def table_csv(sheet: str) -> str:
    return f"{PERF_CSVS}/{sheet}.csv"


def ops_csv(key: str) -> str:
    return f"{CATEGORY_DATA}/{key}_ops.csv"


def metadata(key: str) -> str:
    return f"{METADATA}/{key}_metadata.json"


def tree_data(key: str) -> str:
    return f"{CATEGORY_DATA}/{key}_tree_data.json"


def metrics(key: str) -> str:
    return f"{CATEGORY_DATA}/{key}_metrics.json"


def findings(key: str) -> str:
    """Compute categories' findings apart from the system ones (kernel fusion is system)."""
    folder = "system_findings" if key in SYSTEM_KEYS else "category_findings"
    return f"{folder}/{key}_findings.md"


# -- a job of many ranks (docs/multirank.md#the-job-folder) ----------------------------------
JOB_FILE = "job.json"  # the job's record and ledger (each rank's run keeps its own run.json)
JOB_TABLES = "job_tables"
JOB_COLLECTIVES = f"{JOB_TABLES}/nccl_implicit_sync.csv"
JOB_STRAGGLERS = f"{JOB_TABLES}/straggler_summary.csv"
JOB_RANKS = f"{JOB_TABLES}/ranks.csv"
JOB_PARQUET = "job_tables_parquet"  # `--format parquet`: the job's tables as Parquet
JOB_REPORT = "job_analysis.md"
JOB_PLOT = "job_ranks.png"
JOB_OVERVIEW = "job_overview.json"  # the job analysis in brief (job/overview.py), for tools
RANKS = "ranks"


def rank_run(rank: int) -> str:
    """The run folder of one rank of a job."""
    return f"{RANKS}/rank-{rank}"
