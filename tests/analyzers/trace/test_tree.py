"""Host call tree (perf_report.md §2.4), launchers and nn.Module stacks (§2.7, §2.8)."""

from __future__ import annotations

import numpy as np
import pytest

from rooflens.analyzers.trace.tree import ancestors, build_host_tree, nearest_ancestor


def host_tree(trace, bleed="drop"):
    no_links = np.full(len(trace.events), -1, dtype=np.int64)
    return build_host_tree(trace.events, no_links, bleed=bleed)


# --- nesting ------------------------------------------------------------------------------


def test_host_events_nest_by_time_whatever_their_file_order(tb):
    trace = tb.load(
        [
            tb.runtime("cudaLaunchKernel", 20, 10, 1),  # 0: in B
            tb.cpu_op("A", 0, 100),  # 1: root
            tb.cpu_op("D", 60, 10),  # 2: in A, after B
            tb.cpu_op("B", 10, 40),  # 3: in A
            tb.cpu_op("E", 200, 10),  # 4: root
            tb.python_function("model.py(12): forward", 22, 2),  # 5: in the launch
        ]
    )
    tree = host_tree(trace)
    assert tree.parent.tolist() == [3, -1, 1, 1, -1, 0]
    assert tree.bled.tolist() == []
    assert tree.dropped.tolist() == []


def test_an_event_starting_exactly_when_another_ends_is_its_sibling(tb):
    trace = tb.load([tb.cpu_op("A", 0, 100), tb.cpu_op("B", 10, 10), tb.cpu_op("C", 20, 5)])
    assert host_tree(trace).parent.tolist() == [-1, 0, 0]


def test_events_on_another_thread_or_process_do_not_nest(tb):
    trace = tb.load(
        [
            tb.cpu_op("A", 0, 100, pid=1, tid=1),
            tb.cpu_op("B", 10, 10, pid=1, tid=2),
            tb.cpu_op("C", 10, 10, pid=2, tid=1),
            tb.cpu_op("D", 30, 10, pid=1, tid=1),
        ]
    )
    assert host_tree(trace).parent.tolist() == [-1, -1, -1, 0]


def test_non_host_events_are_not_in_the_tree(tb):
    trace = tb.load(
        [
            tb.cpu_op("A", 0, 100),
            {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1}
            | {"ts": 10, "dur": 10},
            tb.cpu_op("B", 12, 2),
        ]
    )
    assert host_tree(trace).parent.tolist() == [-1, -1, 0]


@pytest.mark.parametrize(("first", "second"), [("A", "B"), ("B", "A")])
def test_ties_in_start_time_keep_file_order(tb, first, second):
    trace = tb.load([tb.cpu_op(first, 5, 10), tb.cpu_op(second, 5, 10)])
    assert host_tree(trace).parent.tolist() == [-1, 0]


# --- the bleed rule -------------------------------------------------------------------------


def bleed_trace(tb, bleed_ts, bleed_end):
    return tb.load(
        [
            tb.cpu_op("R", 0, 100),  # 0
            tb.cpu_op("A", 10, 10),  # 1: ends at 20
            tb.runtime("cudaLaunchKernel", bleed_ts, bleed_end - bleed_ts, 1),  # 2
            tb.cpu_op("F", 21, 1),  # 3: inside the bleeding event's tail
        ]
    )


@pytest.mark.parametrize("policy", ["drop", "adopt"])
def test_a_bleed_under_1us_at_depth_two_becomes_a_sibling(tb, policy):
    tree = host_tree(bleed_trace(tb, 19.5, 25), bleed=policy)  # overlaps A by 0.5 µs
    assert tree.parent.tolist() == [-1, 0, 0, 2]
    assert tree.bled.tolist() == [2]
    assert tree.dropped.tolist() == []


@pytest.mark.parametrize("bleed_ts", [18.0, 19.0])  # overlap 2 µs, and exactly 1 µs
def test_a_bleed_of_1us_or_more_is_dropped_under_policy_drop(tb, bleed_ts):
    tree = host_tree(bleed_trace(tb, bleed_ts, 25), bleed="drop")
    assert tree.parent.tolist() == [-1, 0, -1, 0]  # F falls back to R
    assert tree.bled.tolist() == [2]
    assert tree.dropped.tolist() == [2]


@pytest.mark.parametrize("bleed_ts", [18.0, 19.0])
def test_a_bleed_of_1us_or_more_is_adopted_by_the_event_it_started_in(tb, bleed_ts):
    tree = host_tree(bleed_trace(tb, bleed_ts, 25), bleed="adopt")
    assert tree.parent.tolist() == [-1, 0, 1, 2]
    assert tree.bled.tolist() == [2]
    assert tree.dropped.tolist() == []


def test_a_tiny_bleed_at_stack_depth_one_is_dropped(tb):
    trace = tb.load([tb.cpu_op("A", 0, 10), tb.cpu_op("E", 9.5, 2.5), tb.cpu_op("G", 11, 0.5)])
    dropped = host_tree(trace, bleed="drop")
    assert dropped.parent.tolist() == [-1, -1, -1]
    assert dropped.dropped.tolist() == [1]
    adopted = host_tree(trace, bleed="adopt")
    assert adopted.parent.tolist() == [-1, 0, 1]
    assert adopted.dropped.tolist() == []


def test_a_dropped_op_leaves_its_launches_to_the_event_around_it(tb):
    # B bleeds 5 µs past A and is dropped; its launch nests in A instead, as in TraceLens
    model = tb.model(
        [
            tb.cpu_op("A", 0, 10),  # 0
            tb.cpu_op("B", 5, 10),  # 1
            *tb.launch(3, ts=6, kernel_ts=50, kernel_dur=5),  # 2..5
        ]
    )
    assert model.tree.dropped.tolist() == [1]
    assert model.tree.parent[[1, 2, 5]].tolist() == [-1, 0, 2]
    assert model.launcher[5] == 0


# --- GPU events, launchers, modules ---------------------------------------------------------


def stacked_trace(tb):
    return [
        tb.python_function("nn.Module: Qwen2_5Model_0", 0, 1000),  # 0
        tb.python_function("nn.Module: Qwen2_5Attention_0", 10, 500),  # 1
        tb.cpu_op("aten::linear", 20, 100),  # 2
        tb.cpu_op("aten::addmm", 30, 80),  # 3
        tb.python_function("torch/cuda/__init__.py(7): launch", 40, 50),  # 4
        *tb.launch(10, ts=50, kernel_ts=2000, kernel_dur=30),  # 5 runtime, 6 s, 7 f, 8 kernel
        tb.python_function("nn.Module: Linear", 600, 100),  # 9: inside the model, no counter
        *tb.launch(11, ts=610, kernel_ts=2100, kernel_dur=10),  # 10 runtime .. 13 kernel
    ]


def test_gpu_events_hang_under_their_launch(tb):
    model = tb.model(stacked_trace(tb))
    assert model.tree.parent[8] == 5
    assert ancestors(model.tree.parent, 8) == [5, 4, 3, 2, 1, 0]


def test_the_launcher_is_the_nearest_cpu_op_above_the_launch_skipping_python_frames(tb):
    model = tb.model(stacked_trace(tb))
    assert model.launcher[8] == 3  # aten::addmm, not the python frame 4 nor aten::linear 2
    assert model.launcher[13] == -1  # launched from a module with no cpu_op around it
    non_gpu = np.setdiff1d(np.arange(14), [8, 13])
    assert (model.launcher[non_gpu] == -1).all()


def test_module_is_the_innermost_nn_module_frame_above_an_event(tb):
    model = tb.model(stacked_trace(tb))
    assert model.module[[8, 5, 3, 2]].tolist() == [1, 1, 1, 1]
    assert model.module[1] == 0  # a module frame's module is the one around it
    assert model.module[0] == -1
    assert model.module[13] == 9


def test_module_stack_strips_only_the_trailing_instance_counter(tb):
    model = tb.model(stacked_trace(tb))
    assert model.module_stack(8) == ["Qwen2_5Model", "Qwen2_5Attention"]
    assert model.module_stack(13) == ["Qwen2_5Model", "Linear"]
    assert model.module_stack(0) == []


def test_call_stack_lists_enclosing_host_events_outermost_first(tb):
    model = tb.model(stacked_trace(tb))
    assert model.call_stack(8) == [
        "nn.Module: Qwen2_5Model_0",
        "nn.Module: Qwen2_5Attention_0",
        "aten::linear",
        "aten::addmm",
        "torch/cuda/__init__.py(7): launch",
        "cudaLaunchKernel",
    ]
    assert model.call_stack(0) == []


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ("nn.Module: Block_12_3", "Block_12"),
        ("nn.Module: Qwen2_5Attention_0", "Qwen2_5Attention"),
        ("nn.Module: MLP_v2", "MLP_v2"),
        ("nn.Module: Linear", "Linear"),
    ],
)
def test_module_class_names_lose_only_a_numeric_suffix(tb, frame, expected):
    model = tb.model([tb.python_function(frame, 0, 100), tb.cpu_op("aten::mm", 10, 10)])
    assert model.module_stack(1) == [expected]


# --- pointer walks --------------------------------------------------------------------------


def test_nearest_ancestor_finds_the_closest_proper_ancestor_in_the_mask():
    #           0   1  2  3   4  5
    parent = np.array([-1, 0, 1, 2, -1, 4])
    mask = np.array([True, False, True, False, False, False])
    nodes = np.array([3, 2, 1, 0, 5, 4])
    assert nearest_ancestor(parent, mask, nodes).tolist() == [2, 0, 0, -1, -1, -1]


def test_nearest_ancestor_of_no_nodes_is_empty():
    parent = np.array([-1, 0])
    assert nearest_ancestor(parent, np.ones(2, bool), np.empty(0, np.int64)).tolist() == []


def test_ancestors_walks_from_the_parent_to_the_root():
    parent = np.array([-1, 0, 1, 2, -1, 4])
    assert ancestors(parent, 3) == [2, 1, 0]
    assert ancestors(parent, 5) == [4]
    assert ancestors(parent, 0) == []
