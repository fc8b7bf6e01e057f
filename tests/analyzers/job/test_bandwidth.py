"""Bus-bandwidth factors, c10d dtype sizes and the link a group crosses
(docs/multirank.md#bandwidth)."""

from __future__ import annotations

import pytest

from rooflens.analyzers.job.bandwidth import bus_factor, element_bytes, link_of
from rooflens.analyzers.perf.platforms import get_platform


@pytest.mark.parametrize(
    "name, ranks, factor",
    [
        ("allreduce", 8, 2 * 7 / 8),
        ("allreduce_coalesced", 2, 1.0),
        ("_allgather_base", 8, 7 / 8),
        ("_reduce_scatter_base", 4, 3 / 4),
        ("reduce_scatter_tensor_coalesced", 16, 15 / 16),
        ("all_to_all", 64, 63 / 64),
        ("allreduce", 1, 0.0),
        ("broadcast", 8, None),
        ("all_to_allv", 8, None),  # uneven splits: no single message size
        ("", 8, None),
    ],
)
def test_bus_factors_are_nccl_tests_ones(name: str, ranks: int, factor: float | None) -> None:
    assert bus_factor(name, ranks) == (pytest.approx(factor) if factor is not None else None)


def test_c10d_dtype_names_have_their_sizes() -> None:
    sizes = {n: element_bytes(n) for n in ("Float", "BFloat16", "Half", "Long", "Byte", "Char")}
    assert sizes == {"Float": 4, "BFloat16": 2, "Half": 2, "Long": 8, "Byte": 1, "Char": 1}
    assert element_bytes("Unknown") is None


def test_a_group_beyond_a_node_crosses_the_network() -> None:
    h100 = get_platform("H100_SXM")
    assert link_of(h100, 8).kind == "NVLink 4" and link_of(h100, 9).kind == "InfiniBand NDR"
    assert link_of(get_platform("T4"), 16) is None and link_of(None, 2) is None


def test_generated_messages_split_as_c10d_records_them() -> None:
    from rooflens.analyzers.synthetic.job import JobPlan

    n = 1 << 18
    assert JobPlan(ranks=8).message() == (n, n)
    assert JobPlan(ranks=8, collective="_allgather_base").message() == (n // 8, n)
    assert JobPlan(ranks=8, collective="_reduce_scatter_base").message() == (n, n // 8)
    with pytest.raises(ValueError, match="one of"):
        JobPlan(collective="gather")
