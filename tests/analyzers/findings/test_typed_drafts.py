"""The drafts read the analyses' typed results: system cards take the metrics models, a
comparative fusion card takes the run's candidates themselves (or their file's entries)."""

from __future__ import annotations

from rooflens.analyzers.categories.cpu_idle import CpuIdleMetrics
from rooflens.analyzers.categories.kernel_fusion import FusionEstimate, KernelFusionMetrics
from rooflens.analyzers.categories.multi_kernel import MultiKernelMetrics
from rooflens.analyzers.findings.contract.contract import render_findings
from rooflens.analyzers.findings.drafting.copy_draft import copy_card
from rooflens.analyzers.findings.drafting.drafts import draft_findings
from rooflens.analyzers.findings.drafting.system_drafts import cpu_idle_pairs, multi_kernel_pairs
from rooflens.analyzers.prepare.comparative_fusion import ComparativeCandidate
from tests.helpers.sample_metrics import CPU_IDLE, MULTI_KERNEL

CANDIDATE = ComparativeCandidate(
    module_name="model.layers.0.mlp", base_name="MLP", parent_chain=[], instance_count=24,
    kernel_count_trace1=3, kernel_count_trace2=1, delta=2,
    kernels_trace1=[{"name": "gemm_a", "type": "GEMM", "dur_us": 400.0},
                    {"name": "act|silu", "type": "Elementwise", "dur_us": 150.0},
                    {"name": "gemm_b", "type": "GEMM", "dur_us": 410.0}],
    kernels_trace2=[{"name": "fused_mlp", "type": "GEMM", "dur_us": 700.5}],
    kernel_type_signature=[], kernel_type_summary={}, has_fused_kernel=False,
    total_kernel_time_us_trace1=23_040.0, total_kernel_time_us_trace2=16_812.0,
)  # fmt: skip
MEASURED = KernelFusionMetrics(
    status="OK",
    candidate_count=1,
    impact_estimates=[
        FusionEstimate(
            operation="MLP",
            impact_score=6.23,
            impact_score_low=5.3,
            impact_score_high=7.16,
            estimation="measured",
            bound_type="compute",
            time_ms=23.04,
            instance_count=24,
            kernel_count=3,
            modeled_kernel_count=2,
            delta_kernel_count=2,
            confidence="medium",
            affected_gpu_kernels=["gemm_a", "act|silu", "gemm_b"],
            fusion_type="matrix_compute",
        )
    ],
)


def test_a_comparative_fusion_card_shows_both_traces_kernels_from_the_candidate() -> None:
    text = render_findings(draft_findings("kernel_fusion", MEASURED, [CANDIDATE]))
    assert (
        "`MLP` runs as 3 kernels in trace 1 against 1 in trace 2 "
        "(23.040 ms against 16.812 ms over 24 instances)."
    ) in text
    assert "| `act\\|silu` | Elementwise | 150.0 |" in text
    assert "| `fused_mlp` | GEMM | 700.5 |" in text
    # the file's entries (a restored run) give the same card
    as_read = render_findings(draft_findings("kernel_fusion", MEASURED, [CANDIDATE.as_dict()]))
    assert as_read == text


def test_system_cards_read_the_metrics_models() -> None:
    idle = CpuIdleMetrics.model_validate(CPU_IDLE)
    ((card, block),) = cpu_idle_pairs(idle)
    assert card.title == "GPU idle for 25.0% of the trace"
    assert block.section("Data").tables[0].rows[0] == ("Idle time", "12.5 ms (25.0%)", "true")
    multi = MultiKernelMetrics.model_validate(MULTI_KERNEL)
    title, insight, *_ = copy_card(multi) or ("", "")
    assert (title, insight) == (
        "Host-device copies take 3.2 ms, 6.4% of the trace",
        "40 D2H copies take 3.2 ms.",
    )
    cards = [c.title for c, _ in multi_kernel_pairs(multi)]
    assert cards[1:] == [
        "Exposed collective communication is 8.0% of the trace",
        "Communication overlaps compute for only 40.0% of its time",
    ]
