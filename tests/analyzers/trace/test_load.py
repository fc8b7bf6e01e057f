"""Loading a Kineto trace into the events table (perf_report.md §2.1-2.3)."""

from __future__ import annotations

import gc
import gzip
import json
import math

import numpy as np
import pandas as pd
import pytest

from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.schema import ARG_SPECS

CORE_COLUMNS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "flow_id"]


def small_trace(tb):
    return [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python3"}},
        tb.cpu_op(
            "aten::mm",
            10.5,
            20.25,
            args={
                "External id": 4,
                "Sequence number": 9,
                "Input Dims": [[2, 3], [3, 4]],
                "Input type": ["float", "float"],
            },
        ),
        tb.runtime("cudaLaunchKernel", 12, 3, correlation=77, args={"cbid": 211}),
        tb.flow("s", 77, 1, 1, 12),
        tb.kernel("gemm", 40, 8, correlation=77, args={"grid": [4, 1, 1]}),
    ]


# --- the events table ---------------------------------------------------------------------


def test_events_table_has_one_row_per_trace_event_indexed_by_uid(tb):
    events = tb.load(small_trace(tb)).events
    assert events.index.name == "uid"
    assert events.index.tolist() == [0, 1, 2, 3, 4]
    assert list(events.columns[: len(CORE_COLUMNS)]) == CORE_COLUMNS
    assert {spec.column for spec in ARG_SPECS} <= set(events.columns)


def test_event_fields_land_in_typed_columns(tb):
    events = tb.load(small_trace(tb)).events
    assert events["ph"].astype(str).tolist() == ["M", "X", "X", "s", "X"]
    assert events["name"].astype(str).tolist() == [
        "process_name",
        "aten::mm",
        "cudaLaunchKernel",
        "ac2g",
        "gemm",
    ]
    assert events["pid"].tolist() == [1, 1, 1, 1, 0]
    assert events["tid"].tolist() == [0, 1, 1, 1, 7]
    assert events["ts"].tolist()[1:] == [10.5, 12.0, 12.0, 40.0]
    assert math.isnan(events["ts"].iat[0])  # the M event has no ts
    assert events["dur"].iat[1] == 20.25
    assert math.isnan(events["dur"].iat[3])  # flows have no duration
    assert events["flow_id"].tolist() == [-1, -1, -1, 77, -1]
    assert events["pid"].dtype == np.int64
    assert events["ts"].dtype == np.float64


def test_kept_args_become_columns_and_absent_ones_are_missing(tb):
    events = tb.load(small_trace(tb)).events
    assert events["correlation"].tolist() == [-1, -1, 77, -1, 77]
    assert events["external_id"].tolist() == [-1, 4, -1, -1, -1]
    assert events["seq"].tolist() == [-1, 9, -1, -1, -1]
    assert events["cbid"].tolist() == [-1, -1, 211, -1, -1]
    assert events["stream"].tolist() == [-1, -1, -1, -1, 7]
    assert events["device"].tolist() == [-1, -1, -1, -1, 0]
    # JSON-valued args keep their JSON text, as categorical strings
    assert json.loads(events["input_dims"].iat[1]) == [[2, 3], [3, 4]]
    assert json.loads(events["input_type"].iat[1]) == ["float", "float"]
    assert json.loads(events["grid"].iat[4]) == [4, 1, 1]
    assert events["input_dims"].isna().tolist() == [True, False, True, True, True]
    assert math.isnan(events["bandwidth_gbs"].iat[4])


def test_equal_json_args_share_one_category(tb):
    ops = [tb.cpu_op("aten::add", t, 1, args={"Input Dims": [[8], [8]]}) for t in (0, 5)]
    events = tb.load(ops).events
    assert len(events["input_dims"].cat.categories) == 1
    assert json.loads(events["input_dims"].iat[1]) == [[8], [8]]


def test_an_empty_event_list_gives_an_empty_table_with_the_same_columns(tb):
    full = tb.load(small_trace(tb)).events
    empty = tb.load([], name="empty.json").events
    assert len(empty) == 0
    assert list(empty.columns) == list(full.columns)


def test_gzip_traces_load_like_plain_ones(tb):
    plain = tb.load(small_trace(tb), name="t.json").events
    zipped = tb.load(small_trace(tb), name="t.json.gz").events
    pd.testing.assert_frame_equal(plain, zipped)


def test_a_gzip_file_named_plain_json_is_still_read(tb, tmp_path):
    path = tmp_path / "t.json"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": small_trace(tb)}).encode()))
    assert load_trace(path).events["name"].astype(str).tolist()[1] == "aten::mm"


def test_chromes_bare_array_form_loads(tb):
    path = tb.write_json(small_trace(tb), "bare.json")
    trace = load_trace(path)
    assert len(trace.events) == 5
    assert trace.events["correlation"].tolist() == [-1, -1, 77, -1, 77]
    assert trace.meta.devices == ()
    assert trace.meta.distributed is None


def test_pre_2022_category_spellings_are_normalised(tb):
    events = [
        {"ph": "X", "cat": cat, "name": f"e{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1}
        for i, cat in enumerate(
            [
                "Operator",
                "Kernel",
                "Runtime",
                "Memcpy",
                "Memset",
                "kernel",
                "Trace",
                "Driver",
                "Python function",
            ]
        )
    ]
    cat = tb.load(events).events["cat"]
    assert cat.astype(str).tolist() == [
        "cpu_op",
        "kernel",
        "cuda_runtime",
        "gpu_memcpy",
        "gpu_memset",
        "kernel",
        "Trace",  # unknown categories pass through
        "cuda_driver",
        "python_function",
    ]
    # old and new spellings end up as one category, so `cat == "kernel"` finds both
    assert sorted(cat.cat.categories) == sorted(
        [
            "cpu_op",
            "kernel",
            "cuda_runtime",
            "gpu_memcpy",
            "gpu_memset",
            "Trace",
            "cuda_driver",
            "python_function",
        ]
    )
    assert (cat == "kernel").sum() == 2


def test_string_pids_survive_and_label_gives_their_text(tb):
    trace = tb.load(
        [
            tb.cpu_op("a", 0, 1, pid="Spans", tid="PyTorch Profiler"),
            tb.cpu_op("b", 0, 1, pid=12, tid=3),
            tb.cpu_op("c", 0, 1, pid="Spans", tid=3),
        ]
    )
    pid = trace.events["pid"].tolist()
    tid = trace.events["tid"].tolist()
    assert pid[1] == 12
    assert pid[0] == pid[2] < -1  # text ids get negative codes, never MISSING (-1)
    assert tid[0] < -1
    assert tid[0] != pid[0]
    assert tid[1:] == [3, 3]
    assert trace.label(pid[0]) == "Spans"
    assert trace.label(tid[0]) == "PyTorch Profiler"
    assert trace.label(12) == "12"


def test_integers_beyond_int64_in_args_do_not_crash_and_are_counted(tb):
    trace = tb.load(
        [
            tb.kernel("k", 0, 1, correlation=2**70, args={"Unknown arg": 2**80}),
            tb.kernel("k", 5, 1, correlation=3),
        ]
    )
    assert trace.events["correlation"].tolist() == [-1, 3]
    # the unknown arg is never decoded, so only the kept column reports a bad value
    assert dict(trace.bad_values) == {"correlation": 1}


def test_values_that_are_not_integers_are_counted_as_bad(tb):
    trace = tb.load(
        [
            tb.kernel("k", 0, 1, correlation="abc"),
            tb.kernel("k", 1, 1, correlation=[1]),
            tb.kernel("k", 2, 1, correlation="12"),
            tb.kernel("k", 3, 1, correlation=None),
        ]
    )
    assert trace.events["correlation"].tolist() == [-1, -1, 12, -1]
    assert dict(trace.bad_values) == {"correlation": 2}


def test_a_float_id_beyond_int64_does_not_crash_and_is_counted(tb):
    trace = tb.load([tb.kernel("k", 0, 1, correlation=1e30), tb.kernel("k", 5, 1, correlation=3)])
    assert trace.events["correlation"].tolist() == [-1, 3]
    assert dict(trace.bad_values) == {"correlation": 1}


def test_a_fractional_id_is_missing_and_counted_not_truncated(tb):
    trace = tb.load([tb.kernel("k", 0, 1, correlation=1.5), tb.kernel("k", 5, 1, correlation=3)])
    assert trace.events["correlation"].tolist() == [-1, 3]
    assert dict(trace.bad_values) == {"correlation": 1}


def test_a_float_pid_beyond_int64_does_not_crash(tb):
    trace = tb.load([tb.cpu_op("a", 0, 1, pid=1e30), tb.cpu_op("b", 0, 1, pid=3)])
    pid = trace.events["pid"].tolist()
    assert pid[1] == 3
    assert pid[0] not in (-1, 3)


def test_a_negative_numeric_pid_and_a_text_pid_stay_distinct(tb):
    trace = tb.load([tb.cpu_op("a", 0, 1, pid=-2), tb.cpu_op("b", 0, 1, pid="Spans")])
    pid = trace.events["pid"].tolist()
    assert pid[0] != pid[1]
    assert trace.label(pid[1]) == "Spans"
    assert trace.label(pid[0]) == "-2"


def test_an_integral_float_id_is_kept(tb):
    trace = tb.load([tb.kernel("k", 0, 1, correlation=5.0), tb.kernel("k", 5, 1, correlation=3)])
    assert trace.events["correlation"].tolist() == [5, 3]
    assert dict(trace.bad_values) == {}


def test_invalid_utf8_in_a_kernel_name_is_repaired_not_fatal(tmp_path):
    path = tmp_path / "bad_utf8.json"
    path.write_bytes(
        b'{"traceEvents": ['
        b'{"ph": "X", "cat": "kernel", "name": "gemm_\xff\xfe_kernel", "pid": 0, "tid": 7,'
        b' "ts": 1, "dur": 2},'
        b'{"ph": "X", "cat": "kernel", "name": "ok_kernel", "pid": 0, "tid": 7, "ts": 5, "dur": 1}'
        b"]}"
    )
    trace = load_trace(path)
    names = trace.events["name"].astype(str).tolist()
    assert trace.repaired_utf8_batches >= 1
    assert "\ufffd" in names[0]
    assert names[0].startswith("gemm_")
    assert names[0].endswith("_kernel")
    assert names[1] == "ok_kernel"
    assert trace.events["ts"].tolist() == [1.0, 5.0]


def test_a_clean_trace_reports_no_repairs_and_no_bad_values(tb):
    trace = tb.load(small_trace(tb))
    assert trace.repaired_utf8_batches == 0
    assert dict(trace.bad_values) == {}


def test_the_top_level_metadata_object_is_never_kept(tb):
    token = "hf_FAKEtokenDoNotLeak123"
    trace = tb.load(
        small_trace(tb),
        metadata={"HF_TOKEN": token, "env": {"AWS_SECRET": token}},
        schemaVersion=1,
    )
    assert token not in repr(trace.meta)
    assert token not in repr(trace)
    for column in trace.events.columns:
        values = trace.events[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            assert not any(token in str(c) for c in values.cat.categories), column
    assert trace.meta.schema_version == "1"


def test_top_level_facts_are_kept_in_meta(tb):
    trace = tb.load(
        small_trace(tb),
        schemaVersion=1,
        deviceProperties=[{"id": 0, "name": "NVIDIA H100 80GB HBM3", "numSms": 132}],
        distributedInfo={"backend": "nccl", "rank": 3, "world_size": 8},
        with_stack=1,
        record_shapes="true",
        cuda_runtime_version=12040,
        baseTimeNanoseconds=1700000000000000000,
    )
    meta = trace.meta
    assert [d.name for d in meta.devices] == ["NVIDIA H100 80GB HBM3"]
    assert meta.devices[0].numSms == 132
    assert (meta.distributed.rank, meta.distributed.world_size) == (3, 8)
    assert meta.flags["with_stack"] is True
    assert meta.flags["record_shapes"] is True
    assert meta.flags["with_modules"] is None
    assert dict(meta.versions) == {"cuda_runtime_version": "12040"}
    assert meta.base_time_ns == 1700000000000000000


# --- errors ---------------------------------------------------------------------------------


def assert_trace_error(path, *fragments):
    with pytest.raises(TraceError) as info:
        load_trace(path)
    message = str(info.value)
    assert str(path) in message  # names the file
    assert info.value.path == path
    for fragment in fragments:
        assert fragment.lower() in message.lower(), message


@pytest.mark.parametrize(("name", "suffix"), [("trace.zip", ".zip"), ("trace.txt", ".txt")])
def test_unknown_suffixes_are_refused(tmp_path, name, suffix):
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": []}))
    assert_trace_error(path, f"unsupported file type '{suffix}'", ".json or .json.gz")


def test_a_missing_file_is_reported(tmp_path):
    assert_trace_error(tmp_path / "nope.json", "file not found")


def test_a_folder_is_not_a_trace(tmp_path):
    folder = tmp_path / "dir.json"
    folder.mkdir()
    assert_trace_error(folder, "is a folder")


def test_a_truncated_gzip_is_reported(tb, tmp_path):
    whole = tb.write(small_trace(tb) * 20, name="whole.json.gz").read_bytes()
    path = tmp_path / "half.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    assert_trace_error(path, "gzip stream is truncated", "copy")


def test_corrupt_gzip_data_is_reported(tmp_path):
    path = tmp_path / "corrupt.json.gz"
    path.write_bytes(b"\x1f\x8b" + b"\x00" * 40)
    assert_trace_error(path, "gzip")


def test_a_json_gz_that_is_not_gzip_is_reported(tmp_path):
    path = tmp_path / "plain.json.gz"
    path.write_text(json.dumps({"traceEvents": []}))
    assert_trace_error(path, "named .json.gz but is not gzip-compressed")


def test_invalid_json_is_reported(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"traceEvents": [}')
    assert_trace_error(path, "invalid JSON", "malformed")


def test_truncated_json_is_reported_as_cut_short(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "a')
    assert_trace_error(path, "invalid JSON", "truncated", "cut short")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"foo": 1}', "no 'traceEvents' list"),
        ("[1, 2]", "none of its 2 'traceEvents' entries is an object"),
        ('"text"', "not a Chrome trace"),
        ('{"traceEvents": 5}', "not a Chrome trace"),
        ('{"traceEvents": [{"foo": 1}, {"name": "x"}]}', "none of its entries has a 'ph'"),
    ],
)
def test_json_that_is_not_a_trace_is_reported(tmp_path, text, fragment):
    path = tmp_path / "other.json"
    path.write_text(text)
    assert_trace_error(path, "not a Chrome trace", fragment)


def test_a_failed_load_leaves_garbage_collection_enabled(tmp_path):
    path = tmp_path / "other.json"
    path.write_text("[1, 2]")
    assert gc.isenabled()
    with pytest.raises(TraceError):
        load_trace(path)
    assert gc.isenabled()


def test_an_odd_device_entry_is_skipped_not_fatal(tb):
    trace = tb.load(
        [tb.kernel("k", 0, 1, correlation=3)],
        deviceProperties=[
            {"name": None, "id": "x"},
            {"id": 1, "name": "NVIDIA H100", "numSms": "132"},
        ],
        distributedInfo="not an object",
    )
    assert [(d.id, d.name, d.numSms) for d in trace.meta.devices] == [(1, "NVIDIA H100", 132)]
    assert trace.meta.distributed is None
