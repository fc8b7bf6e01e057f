"""Graph-capture merge (perf_report.md §9): hand-written replay and capture traces.

The replay holds one graph launch per iteration and the kernels it replayed, with no
operator above them; each capture trace holds the StreamBeginCapture..EndCapture window
where the same kernels were launched by `aten::mm` / `aten::gelu` with shapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rooflens.analyzers.report.launchers import find_launchers
from rooflens.analyzers.trace.capture import capture_windows
from rooflens.analyzers.trace.capture_folder import default_capture_folder, load_captures
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.health import assess
from rooflens.analyzers.trace.open_trace import open_trace
from tests.helpers.capture_traces import capture_events, replay_events, write_case


def kernel_launchers(model) -> list[str]:
    gpu = model.gpu.sort_values("ts")
    owner = find_launchers(model)[gpu.index.to_numpy()]
    return [str(model.names[u]) for u in owner]


def test_replayed_kernels_get_the_capture_time_operators_and_shapes(tb):
    model = open_trace(write_case(tb))
    assert kernel_launchers(model) == ["aten::mm", "aten::gelu", "aten::mm"]
    gpu = model.gpu.sort_values("ts")
    dims = model.events["input_dims"].to_numpy()[model.launcher[gpu.index.to_numpy()]]
    assert [json.loads(d) for d in dims] == [
        [[32, 64], [64, 128]],
        [[32, 128]],
        [[32, 128], [128, 64]],
    ]
    merge = model.capture
    assert (merge.graph_launches, merge.merged_launches, merge.merged_gpu_events) == (1, 1, 3)
    # 3 ops + 3 launches grafted; the op before the window and the op with no launch stay out
    assert merge.added_events == 6
    assert model.recorded_events == len(model.events) - 6
    grafted = model.events.iloc[model.recorded_events :]
    graph_launch = model.events.index[model.events["name"] == "hipGraphLaunch"][0]
    assert (grafted["ts"] == 10).all() and (grafted["dur"] == 20).all()  # the graph launch's
    assert (grafted["correlation"] == -1).all()
    tops = model.tree.parent[grafted.index[grafted["cat"] == "cpu_op"]]
    assert (tops == graph_launch).all()  # capture roots hang under the graph launch
    # the replay is still linked to its graph launch (timeline, launch overhead)
    assert (model.gpu["launch"] == graph_launch).all()


def test_health_counts_only_recorded_events_and_reports_the_merge(tb):
    path = write_case(tb)
    plain, merged = assess(open_trace(path, captures=None)), assess(open_trace(path))
    assert merged.events == plain.events
    assert merged.events_by_category == plain.events_by_category
    assert plain.capture_merge is None
    assert [w.code for w in plain.warnings if "graph" in w.code] == ["graph_replay"]
    assert merged.capture_merge.merged_graph_launches == 1
    assert merged.capture_merge.captures[0].batch_size == 32
    assert merged.capture_merge.captures[0].classified_by == "annotation capture_32_FULL"
    assert [w.code for w in merged.warnings if "graph" in w.code] == ["graph_capture_merged"]


def test_pairing_is_by_kernel_name_not_position(tb):
    model = open_trace(write_case(tb, swap=True))
    assert kernel_launchers(model) == ["aten::gelu", "aten::mm", "aten::mm"]


def test_every_replay_gets_its_own_copy_of_the_operators(tb):
    model = open_trace(write_case(tb, iterations=3))
    assert model.capture.merged_launches == 3
    assert model.capture.added_events == 18
    mm = model.launcher[model.gpu.index.to_numpy()]
    assert len(np.unique(mm)) == 9  # no two replayed kernels share a grafted operator


def test_smallest_capture_that_holds_the_batch_is_chosen(tb):
    path = write_case(tb, captures=((8, True), (64, True), (32, True)), batch=16)
    model = open_trace(path)
    grafted = model.events.iloc[model.recorded_events :]
    mm = grafted[grafted["name"] == "aten::mm"]
    assert model.capture.merged_launches == 1
    # all three captures have the same kernels; the 32 one is the smallest with batch >= 16
    assert json.loads(mm["input_dims"].iloc[0])[0][0] == 32
    assert assess(model).capture_merge.captures[0].file == "bs32.json"


def test_no_capture_large_enough_leaves_the_replay_unmerged_and_says_why(tb):
    model = open_trace(write_case(tb, captures=((8, True),), batch=16))
    assert model.capture.merged_launches == 0
    assert model.capture.problems == (
        "1 graph launch(es): no capture trace has a batch size of at least 16",
    )
    health = assess(model)
    assert [w.code for w in health.warnings if "graph" in w.code] == ["graph_capture_unmerged"]
    assert kernel_launchers(model) == ["model_step"] * 3  # as without captures


def test_a_window_whose_kernels_differ_does_not_pair(tb):
    folder = tb.folder / "capture_traces"
    folder.mkdir()
    tb.write(capture_events(tb, 32, second="other_act"), name="capture_traces/bs32.json")
    model = open_trace(tb.write(replay_events(tb), name="replay.json"))
    assert model.capture.merged_launches == 0
    assert "did not pair, by kernel name" in model.capture.problems[0]


def test_without_kernel_names_windows_pair_by_position_when_counts_agree(tb):
    model = open_trace(write_case(tb, captures=((32, False),)))
    assert kernel_launchers(model) == ["aten::mm", "aten::gelu", "aten::mm"]


def test_execution_details_override_the_annotation(tb):
    details = [{"file": "bs32.json", "batch_size": 12, "mode": "full"}]
    model = open_trace(write_case(tb, details=details, batch=16))
    # the details file says this capture holds batch 12 < 16: it cannot serve the iteration
    assert model.capture.merged_launches == 0
    assert model.capture.captures[0][1:4] == (12, "FULL", "execution_details.json")


def test_a_broken_execution_details_file_is_a_clear_error(tb):
    write_case(tb, details={"file": "bs32.json"})
    with pytest.raises(TraceError, match=r"execution_details\.json: not a list"):
        load_captures(tb.folder / "capture_traces")


def test_named_capture_folder_problems_raise_but_automatic_lookup_only_reports(tb):
    path = write_case(tb)
    (tb.folder / "capture_traces" / "bs32.json").write_text("{not json")
    with pytest.raises(TraceError):
        open_trace(path, captures=tb.folder / "capture_traces")
    model = open_trace(path)  # automatic: the replay is still analysed
    assert model.capture.merged_launches == 0
    assert model.capture.problems[0].startswith("capture folder not used:")
    with pytest.raises(TraceError, match="does not exist"):
        open_trace(path, captures=tb.folder / "nowhere")


def test_capture_folder_outside_the_allowed_paths_is_refused(tb):
    path = write_case(tb)
    allowed = tb.folder / "only_this"
    with pytest.raises(TraceError, match="outside the allowed directories"):
        load_captures(tb.folder / "capture_traces", allow=lambda p: p.is_relative_to(allowed))
    model = open_trace(path, allow=lambda p: p.is_relative_to(allowed))
    assert model.capture.merged_launches == 0


def test_an_eager_trace_is_never_merged(tb):
    folder = tb.folder / "capture_traces"
    folder.mkdir()
    tb.write(capture_events(tb), name="capture_traces/bs32.json")
    eager = tb.write(tb.launch(1, 10, 20, 5), name="eager.json")
    assert default_capture_folder(eager) == folder
    assert open_trace(eager).capture is None


def test_capture_windows_list_launches_in_order_with_their_keys(tb):
    events = [*capture_events(tb), tb.runtime("hipMemcpyAsync", 85, 1)]
    trace = tb.load(events, name="c.json")
    (window,) = capture_windows(trace.events)
    assert window.keys == ("gemm_a", "act", "gemm_a", "<memcpy>")
    assert window.start == 0


def test_a_folder_with_no_capture_window_is_refused(tb):
    folder = tb.folder / "caps"
    folder.mkdir()
    tb.write(tb.launch(1, 10, 20, 5), name="caps/eager.json")
    with pytest.raises(TraceError, match="StreamBeginCapture"):
        load_captures(folder)
    assert default_capture_folder(Path(tb.folder / "x.json")) is None
