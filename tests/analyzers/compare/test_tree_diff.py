"""The tree diff on hand-built trace pairs with planted differences: which nodes match, which
are one-sided, their LCA and the diff_stats rows, all derived by hand."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rooflens.analyzers.compare.diff_stats import (
    DIFF_STATS_COLUMNS,
    diff_stats,
    diff_stats_unique_args,
    lca_totals,
)
from rooflens.analyzers.compare.merged_text import merged_tree_text
from rooflens.analyzers.compare.tree_diff import align, diff_traces
from tests.helpers.comparison_files import write_diff_stats
from tests.helpers.trace_builder import Event, TraceBuilder

# (op name, kernel name, kernel duration) under one top-level `model_step` operator
TRACE1_OPS = [
    ("aten::linear", "gemm_a", 30.0),
    ("aten::relu", "relu_k", 5.0),
    ("aten::add", "add_k", 4.0),
]
# relu replaced by gelu, and one extra op (mul) at the end
TRACE2_OPS = [
    ("aten::linear", "gemm_a", 20.0),
    ("aten::gelu", "gelu_k", 6.0),
    ("aten::add", "add_k", 4.0),
    ("aten::mul", "mul_k", 3.0),
]


def step_events(tb: TraceBuilder, ops: list[tuple[str, str, float]]) -> list[Event]:
    """`model_step` [0, 100 * len(ops)] holding each op (dur 50) with one launch inside."""
    events = [tb.cpu_op("model_step", 0, 100 * len(ops))]
    for i, (op, kernel, dur) in enumerate(ops):
        start = 100 * i + 10
        events.append(tb.cpu_op(op, start, 50))
        events += tb.launch(i + 1, start + 10, 1000 + 100 * i, dur, kernel_name=kernel)
    return events


def pair(tb: TraceBuilder, events1: list[Event], events2: list[Event]):
    model1 = tb.model(events1)
    tb2 = TraceBuilder(tb.folder / "two")
    tb2.folder.mkdir()
    return diff_traces(model1, tb2.model(events2))


def test_replaced_and_extra_ops(tb: TraceBuilder) -> None:
    """relu -> gelu between two shared neighbours is one renamed node; the extra mul is
    one-sided under `model_step`."""
    diff = pair(tb, step_events(tb, TRACE1_OPS), step_events(tb, TRACE2_OPS))
    assert merged_tree_text(diff).splitlines() == [
        "└── model_step",
        "    ├── aten::linear",
        "    │   └── cudaLaunchKernel",
        "    │       └── gemm_a",
        "    ├── aten::relu | aten::gelu",
        "    │   └── cudaLaunchKernel",
        "    │       ├── >> trace1: relu_k",
        "    │       └── << trace2: gelu_k",
        "    ├── aten::add",
        "    │   └── cudaLaunchKernel",
        "    │       └── add_k",
        "    └── << trace2: aten::mul",
        "        └── << trace2: cudaLaunchKernel",
        "            └── << trace2: mul_k",
    ]
    stats = diff_stats(diff)
    assert list(stats.columns) == DIFF_STATS_COLUMNS
    rows = stats[["name", "cpu_op_name", "source", "kernel_time", "busy_time"]]
    assert rows.values.tolist() == [
        ["mul_k", "aten::mul", "trace2", 3.0, 3.0],
        ["relu_k", "aten::relu", "trace1", 5.0, 5.0],
        ["gelu_k", "aten::gelu", "trace2", 6.0, 6.0],
    ]
    # pre-order ids: model_step 0, linear 1 (launch 2, gemm 3), relu|gelu 4; the matched
    # launch (5) above relu_k and gelu_k is not an operator, so their LCA is node 4
    assert stats["lowest_common_ancestor_id"].tolist() == [0, 4, 4]
    assert stats["lowest_common_ancestor_name"].tolist() == [
        "model_step",
        "aten::relu | aten::gelu",
        "aten::relu | aten::gelu",
    ]
    assert stats["nn_module_parent"].tolist() == ["root"] * 3
    totals = lca_totals(stats)
    assert totals.values.tolist() == [
        [0, "model_step", 0.0, 0, 3.0, 1],
        [4, "aten::relu | aten::gelu", 5.0, 1, 6.0, 1],
    ]


def test_an_op_replaced_among_several_is_one_sided(tb: TraceBuilder) -> None:
    """Two ops where the other trace has one: no rename, each side's op is one-sided."""
    ops1 = [
        ("aten::linear", "gemm_a", 30.0),
        ("aten::relu", "relu_k", 5.0),
        ("aten::add", "add_k", 4.0),
    ]
    ops2 = [("aten::linear", "gemm_a", 30.0), ("aten::add", "add_k", 4.0)]
    ops2[1:1] = [("aten::gelu", "gelu_k", 6.0), ("aten::silu", "silu_k", 2.0)]
    diff = pair(tb, step_events(tb, ops1), step_events(tb, ops2))
    stats = diff_stats(diff)
    assert stats[["name", "source"]].values.tolist() == [
        ["relu_k", "trace1"],
        ["gelu_k", "trace2"],
        ["silu_k", "trace2"],
    ]
    assert set(stats["lowest_common_ancestor_name"]) == {"model_step"}


def test_matched_kernels_give_no_rows_whatever_their_time(tb: TraceBuilder) -> None:
    ops2 = [
        ("aten::linear", "gemm_a", 90.0),
        ("aten::relu", "relu_k", 1.0),
        ("aten::add", "add_k", 4.0),
    ]
    diff = pair(tb, step_events(tb, TRACE1_OPS), step_events(tb, ops2))
    assert diff.matched.all()
    assert diff_stats(diff).empty


def conv_events(tb: TraceBuilder, vendor: str) -> list[Event]:
    """`aten::_convolution`: on "mi" a `miopen` wrapper holds two launches and the bias
    `aten::add_`; on "nv" `cudnn` holds one launch and `aten::add_` is its sibling."""
    events = [tb.cpu_op("aten::_convolution", 0, 200)]
    if vendor == "mi":
        events.append(tb.cpu_op("aten::miopen_convolution", 5, 190))
        events += tb.launch(1, 10, 1000, 7.0, "transpose_k", name="hipLaunchKernel")
        events += tb.launch(2, 20, 1010, 20.0, "igemm_k", name="hipLaunchKernel")
        events.append(tb.cpu_op("aten::add_", 100, 50))
        events += tb.launch(3, 110, 1040, 2.0, "add_mi", name="hipLaunchKernel")
    else:
        events.append(tb.cpu_op("aten::cudnn_convolution", 5, 80))
        events += tb.launch(1, 10, 1000, 12.0, "cutlass_k")
        events.append(tb.cpu_op("aten::add_", 100, 50))
        events += tb.launch(2, 110, 1040, 3.0, "add_nv")
    return events


def test_a_wrapper_hiding_a_shared_op_is_opened(tb: TraceBuilder) -> None:
    diff = pair(tb, conv_events(tb, "mi"), conv_events(tb, "nv"))
    lines = merged_tree_text(diff).splitlines()
    assert lines[:2] == ["└── aten::_convolution", "    ├── aten::add_"]
    assert "miopen" not in "".join(lines)  # opened: its launches hang under the LCA
    assert "    └── << trace2: aten::cudnn_convolution" in lines
    stats = diff_stats(diff).set_index("name")
    assert (
        stats.loc[["transpose_k", "igemm_k", "cutlass_k"], "lowest_common_ancestor_name"].tolist()
        == ["aten::_convolution"] * 3
    )
    assert stats.loc["transpose_k", "cpu_op_name"] == "aten::miopen_convolution"
    assert stats.loc["transpose_k", "busy_time"] == 27.0  # 7 + 20, one after the other
    assert (
        stats.loc[["add_mi", "add_nv"], "lowest_common_ancestor_name"].tolist()
        == ["aten::add_"] * 2
    )
    assert stats.loc[["add_mi", "add_nv"], "lowest_common_ancestor_id"].tolist() == [1, 1]


def test_unique_args_summary_and_writer(tb: TraceBuilder, tmp_path: Path) -> None:
    ops1 = [("aten::relu", "relu_k", 5.0), ("aten::relu", "relu_k", 7.0)]
    ops2 = [("aten::gelu", "gelu_k", 6.0)]
    diff = pair(tb, step_events(tb, ops1), step_events(tb, ops2))
    stats = diff_stats(diff)
    assert len(stats) == 3
    summary = diff_stats_unique_args(stats)
    # the two relu instances are different operators (cpu_op_uid), so they stay apart
    assert summary[["name", "operation_count", "kernel_time_sum"]].values.tolist() == [
        ["relu_k", 1, 7.0],
        ["gelu_k", 1, 6.0],
        ["relu_k", 1, 5.0],
    ]
    written = write_diff_stats(diff, tmp_path / "out")
    assert [p.name for p in written] == [
        "diff_stats.csv",
        "diff_stats_unique_args_summary.csv",
        "merged_tree_output.txt",
    ]
    assert written[2].read_text("utf-8") == merged_tree_text(diff)
    back = pd.read_csv(written[0])
    assert back["kernel_time"].tolist() == [5.0, 7.0, 6.0]
    assert back["lowest_common_ancestor_name"].tolist() == ["model_step"] * 3


def test_align_is_a_longest_common_subsequence() -> None:
    assert align(list("abcd"), list("abcd")) == [(0, 0), (1, 1), (2, 2), (3, 3)]
    assert align(list("axbc"), list("abyc")) == [(0, 0), (2, 1), (3, 3)]
    assert align([], list("ab")) == []
    # equal heads pair first: trace 2's second `b` is left over
    assert align(list("ab"), list("abb")) == [(0, 0), (1, 1)]
    # a tie (`c` or `a`) is broken walking back from the ends: trace 1's `a` is skipped
    assert align(list("cab"), list("acb")) == [(0, 1), (2, 2)]


def test_align_of_long_lists_keeps_every_common_run() -> None:
    """Past the exact programme's size, the fallback still pairs the shared runs in order."""
    a = [f"op{i}" for i in range(3000)]
    b = [*a[:1000], "extra", *a[1000:2000], *a[2001:]]  # one op inserted, one removed
    a[0], b[0] = "first_a", "first_b"  # no common head, so the middle is long
    pairs = align(a, b)
    assert len(pairs) == 2998
    assert (1000, 1001) in pairs and (2000, 2000) not in pairs
    assert pairs == sorted(pairs)


def test_a_one_sided_top_level_op_has_no_lca(tb: TraceBuilder) -> None:
    """An extra top-level operator shares no ancestor: its rows have an empty LCA, written
    as empty cells."""
    events1 = step_events(tb, TRACE1_OPS)
    events2 = [*events1, tb.cpu_op("aten::zero_", 400, 20), *tb.launch(9, 405, 2000, 2.5, "fill_k")]
    diff = pair(tb, events1, events2)
    stats = diff_stats(diff)
    assert stats[["name", "source", "kernel_time"]].values.tolist() == [["fill_k", "trace2", 2.5]]
    assert stats["lowest_common_ancestor_id"].isna().all()
    assert stats["lowest_common_ancestor_name"].isna().all()
    assert lca_totals(stats).empty  # nothing to total without an LCA
    written = write_diff_stats(diff, tb.folder / "out")
    back = pd.read_csv(written[0])
    assert back["lowest_common_ancestor_id"].isna().all()


def framed(tb: TraceBuilder, ops: list[tuple[str, str, float]]) -> list[Event]:
    """`step_events` without `model_step`, inside a module frame and its forward frame."""
    body = [e for e in step_events(tb, ops) if e.get("name") != "model_step"]
    frames = [
        tb.python_function("nn.Module: Block_0", 0, 100 * len(ops)),
        tb.python_function("model.py(10): forward", 1, 100 * len(ops) - 2),
    ]
    return frames + body


def test_python_frames_are_kept_on_request(tb: TraceBuilder) -> None:
    """Without frames the ops are top-level, so the extra op shares no ancestor; with them the
    module's forward frame is its LCA. The module columns read the frames either way."""
    ops1 = [("aten::linear", "gemm_a", 30.0)]
    ops2 = [("aten::linear", "gemm_a", 30.0), ("aten::mul", "mul_k", 3.0)]
    model1 = tb.model(framed(tb, ops1))
    tb2 = TraceBuilder(tb.folder / "two")
    tb2.folder.mkdir()
    model2 = tb2.model(framed(tb2, ops2))
    plain = diff_stats(diff_traces(model1, model2))
    assert plain["name"].tolist() == ["mul_k"]
    assert plain["lowest_common_ancestor_id"].isna().all()
    kept = diff_stats(diff_traces(model1, model2, python_frames=True))
    assert kept["name"].tolist() == ["mul_k"]
    # pre-order: Block_0 0, forward 1, linear 2 (launch 3, gemm 4), mul 5
    assert kept["lowest_common_ancestor_name"].tolist() == ["model.py(10): forward"]
    assert kept["lowest_common_ancestor_id"].tolist() == [1]
    for stats in (plain, kept):
        assert stats["nn_module_stack"].tolist() == ["nn.Module: Block"]
        assert stats["nn_module_parent"].tolist() == ["nn.Module: Block"]


def test_built_in_method_frames_match_whatever_their_address(tb: TraceBuilder) -> None:
    """A built-in method frame names the object's address, which differs between runs."""

    def events(builder: TraceBuilder, address: str, kernel: str) -> list[Event]:
        frame = f"<built-in method linear of PyCapsule object at {address}>"
        return [
            builder.python_function("model.py(10): forward", 0, 100),
            builder.python_function(frame, 5, 80),
            builder.cpu_op("aten::linear", 10, 50),
            *builder.launch(1, 20, 1000, 30.0, kernel_name=kernel),
        ]

    model1 = tb.model(events(tb, "0x7f72809f2990", "gemm_a"))
    tb2 = TraceBuilder(tb.folder / "two")
    tb2.folder.mkdir()
    model2 = tb2.model(events(tb2, "0x7cc1559c5310", "gemm_b"))
    diff = diff_traces(model1, model2, python_frames=True)
    assert merged_tree_text(diff).splitlines()[:4] == [
        "└── model.py(10): forward",
        "    └── <built-in method linear of PyCapsule object>",
        "        └── aten::linear",
        "            └── cudaLaunchKernel",
    ]
    stats = diff_stats(diff)
    assert stats["name"].tolist() == ["gemm_a", "gemm_b"]
    assert stats["lowest_common_ancestor_name"].tolist() == ["aten::linear"] * 2
