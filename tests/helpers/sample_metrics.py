"""Hand-made metrics of each kind of analysis, as their JSON documents and typed: the inputs
of the drafting, submission and report tests. Numbers are chosen by hand (GEMM: 20 ms in three
operations; two findings, one quantified and one heuristic)."""

from __future__ import annotations

from typing import Any

from rooflens.analyzers.categories.any_metrics import Metrics, metrics_from_document
from rooflens.analyzers.markdown_text import md_cell_lines


def op(name, time_ms, pct, eff, bound, args="(64,64) bf16", pct_category=0.0):
    efficiency = {
        "efficiency_percent": eff, "bound_type": bound, "flops_per_byte": 12.5,
        "compute_spec": "matrix_bf16", "resolved_peak_maf": 708.0, "resolved_peak_hbm_bw": 5.3,
    }  # fmt: skip
    return {
        "name": name, "count": 4, "time_ms": time_ms, "percent_of_category": pct_category,
        "percent_of_total": pct, "efficiency": efficiency, "args": args,
        "library": "vendor GEMM", "launcher_path": "model.py(10): forward",
        "kernel_name_trunc": f"{name}_kernel", "module_chain": ["Net", "Block"],
    }  # fmt: skip


def member(name, time_ms, eff, method="quantified", bound="compute", category="gemm"):
    return {
        "operation": name, "category": category,
        "type": "kernel_tuning" if method == "quantified" else "unmodeled_significant",
        "time_ms": time_ms, "efficiency_pct": eff, "estimate_method": method,
        "bound_type": bound, "library": None, "impact_score": 1.0, "impact_score_low": 0.5,
        "impact_score_high": 1.5,
    }  # fmt: skip


GEMM: dict[str, Any] = {
    "category": "gemm", "status": "OK", "comparison_scope": "standalone",
    "total_time_ms": 20.0, "percent_of_compute": 40.0, "operation_count": 3,
    "operations": [
        op("aten::mm", 8.0, 16.0, 35.5, "compute", pct_category=40.0),
        op("aten::addmm", 4.4, 8.8, 42.0, "compute", args="(8,8) bf16<br>(8,8) bf16",
           pct_category=22.0),
        op("aten::_foo", 3.0, 6.0, None, None, pct_category=15.0),
    ],
    "category_findings": [
        {
            "rank": 1, "bound_type": "compute", "library": "vendor GEMM", "eff_bucket": "30-60",
            "estimate_method": "quantified", "impact_score": 7.31, "impact_score_low": 6.27,
            "impact_score_high": 8.36, "member_count": 2,
            "members": [member("aten::mm", 8.0, 35.5), member("aten::addmm", 4.4, 42.0)],
        },
        {
            "rank": 2, "bound_type": "unmodeled", "library": "Unknown", "eff_bucket": "unknown",
            "estimate_method": "heuristic", "impact_score": 1.8, "impact_score_low": 0.9,
            "impact_score_high": 2.7, "percent_of_total": 6.0, "member_count": 1,
            "members": [member("aten::_foo", 3.0, None, "heuristic", None)],
        },
    ],
}  # fmt: skip
FUSION: dict[str, Any] = {
    "category": "kernel_fusion", "status": "OK", "candidate_count": 3, "estimated_count": 2,
    "impact_estimates": [
        {"operation": "RMSNorm", "impact_score": 11.72, "impact_score_low": 10.04,
         "impact_score_high": 13.39, "estimation": "full", "bound_type": "memory",
         "time_ms": 4.789, "instance_count": 49, "kernel_count": 8, "modeled_kernel_count": 8,
         "confidence": "high", "affected_gpu_kernels": ["k_a", "k|b"],
         "fusion_type": "memory_bound"},
        {"operation": "MLP", "impact_score": 3.1, "impact_score_low": 2.66,
         "impact_score_high": 3.54, "estimation": "partial", "bound_type": "compute",
         "time_ms": 9.37, "instance_count": 24, "kernel_count": 5, "modeled_kernel_count": 3,
         "confidence": "low", "affected_gpu_kernels": [], "fusion_type": "matrix_compute"},
    ],
}  # fmt: skip
CPU_IDLE: dict[str, Any] = {
    "status": "OK", "idle_flagged": True,
    "gpu_utilization": {"total_time_ms": 50.0, "idle_time_ms": 12.5, "idle_time_percent": 25.0,
                        "computation_percent": 75.0, "communication_percent": 0.0,
                        "memcpy_percent": 0.0},
    "impact_estimates": [],
}  # fmt: skip
MULTI_KERNEL: dict[str, Any] = {
    "status": "SUCCESS", "total_time_ms": 50.0,
    "memcpy_assessment": {"flagged": True, "issues": [
        {"direction": "D2H", "count": 40, "time_ms": 3.2, "percent_of_total": 6.4,
         "avg_bytes": 1024.0, "description": "x"}]},
    "nccl_blocking_assessment": {"flagged": True, "exposed_comm_time_ms": 4.0,
                                 "total_comm_time_ms": 9.0, "exposed_percent_of_total": 8.0},
    "overlap_assessment": {"flagged": True, "overlap_ratio": 0.4, "overlap_percent": 40.0,
                           "target_percent": 70},
    "patterns_detected": [
        {"pattern": "high_d2h_memcpy", "description": "x"},
        {"pattern": "nccl_blocking_compute", "description": "8.0 % exposed"},
        {"pattern": "poor_comm_compute_overlap", "description": "40.0 % overlap"},
    ],
    "impact_estimates": [],
}  # fmt: skip


def typed(key: str, document: dict[str, Any]) -> Metrics:
    """The analysis result a document stands for (what the pipeline holds in memory)."""
    return metrics_from_document(key, document)


# the args of the report tests' GEMM operation (operations[].args), and its Args cell as the
# findings table renders it (a code span per <br> part)
REPORT_ARGS = "(64,128) bf16<br>(128,256) bf16"
REPORT_ARGS_CELL = md_cell_lines(REPORT_ARGS)
