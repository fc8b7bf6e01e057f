"""Forward <-> backward pairing through the autograd Sequence number (perf_report.md §2.6)."""

from __future__ import annotations

from rooflens.analyzers.trace.autograd import link_autograd

BWD = "autograd::engine::evaluate_function: "


def seq(n: int) -> dict:
    return {"Sequence number": n}


def pairs(links) -> list[tuple[int, int]]:
    return sorted(zip(links.pairs["fwd"].tolist(), links.pairs["bwd"].tolist(), strict=True))


def test_the_forward_op_is_the_latest_seq_mate_on_another_thread(tb):
    events = [
        tb.cpu_op("aten::linear", 10, 20, tid=1, args=seq(7)),  # 0
        tb.cpu_op("aten::addmm", 12, 10, tid=1, args=seq(7)),  # 1: latest forward with seq 7
        tb.cpu_op("aten::t", 11, 1, tid=1, args=seq(7)),  # 2
        tb.cpu_op("aten::relu", 40, 5, tid=1, args=seq(8)),  # 3
        tb.cpu_op(BWD + "AddmmBackward0", 100, 20, tid=2, args=seq(7)),  # 4
        tb.cpu_op("AddmmBackward0", 101, 10, tid=2, args=seq(7)),  # 5: later, but bwd thread
        tb.cpu_op(BWD + "ReluBackward0", 130, 5, tid=2, args=seq(8)),  # 6
    ]
    links = link_autograd(tb.load(events).events)
    assert pairs(links) == [(1, 4), (3, 6)]
    assert links.fwd.tolist() == [-1, -1, -1, -1, 1, -1, 3]


def test_events_on_the_backward_thread_are_never_the_forward(tb):
    events = [
        tb.cpu_op(BWD + "MulBackward0", 100, 20, tid=2, args=seq(9)),  # 0
        tb.cpu_op("MulBackward0", 101, 10, tid=2, args=seq(9)),  # 1
        tb.cpu_op("aten::mul", 105, 2, tid=2, args=seq(9)),  # 2
    ]
    links = link_autograd(tb.load(events).events)
    assert pairs(links) == []
    assert links.fwd.tolist() == [-1, -1, -1]


def test_the_same_tid_in_another_process_counts_as_another_thread(tb):
    events = [
        tb.cpu_op("aten::mul", 10, 2, pid=2, tid=2, args=seq(9)),  # 0
        tb.cpu_op(BWD + "MulBackward0", 100, 20, pid=1, tid=2, args=seq(9)),  # 1
    ]
    assert pairs(link_autograd(tb.load(events).events)) == [(0, 1)]


def test_a_backward_node_pairs_only_with_its_own_sequence_number(tb):
    events = [
        tb.cpu_op("aten::mul", 10, 2, tid=1, args=seq(1)),  # 0
        tb.cpu_op("aten::add", 50, 2, tid=1, args=seq(2)),  # 1: later, other number
        tb.cpu_op("aten::sub", 60, 2, tid=1),  # 2: no number at all
        tb.cpu_op(BWD + "MulBackward0", 100, 20, tid=2, args=seq(1)),  # 3
    ]
    assert pairs(link_autograd(tb.load(events).events)) == [(0, 3)]


def test_a_trace_without_sequence_numbers_has_no_pairs(tb):
    events = [
        tb.cpu_op("aten::mul", 10, 2, tid=1),
        tb.cpu_op(BWD + "MulBackward0", 100, 20, tid=2),
    ]
    links = link_autograd(tb.load(events).events)
    assert len(links.pairs) == 0
    assert list(links.pairs.columns) == ["fwd", "bwd"]
    assert links.fwd.tolist() == [-1, -1]


def test_build_model_carries_the_autograd_pairs(tb):
    events = [
        tb.cpu_op("aten::mul", 10, 2, tid=1, args=seq(4)),
        tb.cpu_op(BWD + "MulBackward0", 100, 20, tid=2, args=seq(4)),
    ]
    model = tb.model(events)
    assert pairs(model.autograd) == [(0, 1)]
    assert model.autograd.fwd.tolist() == [-1, 0]
