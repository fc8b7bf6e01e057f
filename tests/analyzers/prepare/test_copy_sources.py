"""Copy and collective sources (prepare/copy_sources.py, prepare/collective_table.py) and the
pricing of a copy outside the steady state (categories/copies.py, docs/analysis.md#copies)."""

from __future__ import annotations

import pandas as pd
import pytest

from rooflens.analyzers.categories.copies import NON_BLOCKING, ONE_TIME, PIN, judge
from rooflens.analyzers.findings.ranking.copy_item import source_phrase
from rooflens.analyzers.prepare.collective_table import collective_kind
from rooflens.analyzers.prepare.copies import CopyGroup
from rooflens.analyzers.prepare.copy_sources import Source, Timing, _split


@pytest.mark.parametrize(
    ("chain", "expected"),
    [
        ("CompiledFunction > aten::clone > aten::copy_", ("aten::clone", "CompiledFunction", True)),
        (
            "autograd::engine::evaluate_function: CompiledFunctionBackward > "
            "CompiledFunctionBackward > _c10d_functional::all_reduce_ > record_param_comms",
            ("_c10d_functional::all_reduce_", "CompiledFunctionBackward", True),
        ),
        ("aten::to > aten::_to_copy > aten::copy_", ("aten::to", "", False)),
        (
            "DistributedDataParallel.forward > record_param_comms",
            ("record_param_comms", "DistributedDataParallel.forward", False),
        ),
        ("", ("", "", False)),
    ],
)
def test_the_call_site_is_the_outermost_namespaced_operator(chain, expected) -> None:
    assert _split(chain) == expected


def test_collective_types_from_kernel_names_then_recorded_names() -> None:
    names = pd.Series(
        [
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWork)",
            "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
            "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
            "ncclKernel_Broadcast_RING_LL_Sum_int8_t",
            "rccl_custom_kernel",
            "cross_device_reduce_2stage<bf16>",
        ]
    )
    recorded = pd.Series([None, None, None, None, None, "allreduce", None])
    assert collective_kind(names, recorded).tolist() == [
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "broadcast",
        "all_reduce",
        "reduce",
    ]


def _upload(steady_count: int) -> CopyGroup:
    """1 GB of pageable weights uploaded in 40 ms, all exposed; 3 steady iterations."""
    return CopyGroup(
        name="Memcpy HtoD (Pageable -> Device)",
        route="H2D",
        host_memory="pageable",
        count=4,
        time_us=40_000.0,
        bytes=1_000_000_000,
        with_bytes=4,
        exposed_us=40_000.0,
        launchers=[],
        sources=[
            Source(
                call_site="aten::to",
                callers=["Module.load_state_dict"],
                op_chain="Module.load_state_dict > aten::to > aten::_to_copy > aten::copy_",
                module="",
                frame="bench.py(12): setup",
                compiled=False,
                count=4,
                time_us=40_000.0,
                exposed_us=40_000.0,
                percent_of_group=100.0,
            )
        ],
        timing=Timing(
            by_phase_us={"setup": 40_000.0} if not steady_count else {"steady": 40_000.0},
            steady_count=steady_count,
            steady_iterations=3,
            per_iteration=round(steady_count / 3, 2),
            steady_exposed_us=40_000.0 if steady_count else 0.0,
        ),
    )


def test_a_set_up_upload_is_priced_at_nothing_and_said_one_time() -> None:
    verdict = judge(_upload(0), None, steady=True)
    assert verdict.saving_ms == (0.0, 0.0, 0.0) and verdict.priced_ms == 0.0
    assert verdict.fixes[0] == ONE_TIME
    phrase = source_phrase(verdict)
    assert phrase == (
        "100 % of 40.0 ms of host-to-device copies come from `aten::to` under "
        "`Module.load_state_dict`, in set-up only: not a per-step cost"
    )


def test_the_same_upload_every_step_is_priced_and_pinned_first() -> None:
    verdict = judge(_upload(3), None, steady=True)
    assert verdict.saving_ms == (10.0, 20.0, 30.0)  # no platform: the overlap share only
    assert verdict.fixes[:2] == [PIN, NON_BLOCKING]
    assert len(set(verdict.fixes)) == len(verdict.fixes)
