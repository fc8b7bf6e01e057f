"""Events that are not what a Chrome trace holds: skipped and counted, or named by index."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from rooflens.analyzers.trace.columns import MAX_ARG_DEPTH, nested_deeper_than
from rooflens.analyzers.trace.decode import EventDecoder
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.load import load_trace


def test_an_args_that_is_not_an_object_is_treated_as_absent(tb):
    trace = tb.load(
        [
            {**tb.kernel("k1", 1, 2, correlation=7), "args": [1, 2]},
            {**tb.cpu_op("aten::mm", 0, 5), "args": "Input Dims"},
            {**tb.kernel("k2", 3, 2), "args": 5},
            tb.kernel("k3", 6, 2, correlation=9),
        ]
    )
    events = trace.events
    assert events["name"].tolist() == ["k1", "aten::mm", "k2", "k3"]
    assert events["ts"].tolist() == [1.0, 0.0, 3.0, 6.0]  # the events themselves stay
    assert events["correlation"].tolist() == [-1, -1, -1, 9]
    assert dict(trace.bad_values) == {"args": 3}
    assert dict(trace.skipped) == {}


def test_entries_that_are_not_objects_are_skipped_and_counted(tb):
    trace = tb.load([5, tb.kernel("k", 1, 2), None, "x", [tb.kernel("k", 1, 2)]])
    assert dict(trace.skipped) == {"not_an_object": 4}
    assert len(trace.events) == 5  # uids still count every entry
    assert trace.events["name"].tolist()[1] == "k"
    assert trace.events["ph"].isna().tolist() == [True, False, True, True, True]


def test_numbers_beyond_float_range_read_as_infinite_then_skip_or_count(tmp_path: Path):
    path = tmp_path / "big.json"
    path.write_text(
        '{"traceEvents": ['
        '{"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1, "dur": 1e400},'
        '{"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 1, "dur": 2,'
        ' "args": {"correlation": -1e999, "stream": 7}}]}'
    )
    trace = load_trace(path)
    assert dict(trace.skipped) == {"time_out_of_range": 1}
    assert dict(trace.bad_values) == {"correlation": 1}
    assert trace.events["stream"].tolist() == [-1, 7]


def test_arrays_where_text_belongs_are_missing_and_counted(tb):
    trace = tb.load(
        [
            {**tb.kernel("k", 1, 2), "name": [[["deep"]]]},
            tb.kernel("k", 1, 2, args={"Collective name": {"a": 1}}),
            {**tb.cpu_op("op", 0, 9), "pid": [1, 2]},
        ]
    )
    assert dict(trace.bad_values) == {"name": 1, "Collective name": 1}
    assert dict(trace.skipped) == {"no_name": 1}
    assert trace.events["collective_name"].isna().all()
    assert trace.label(int(trace.events["pid"].iat[2])) == "<malformed>"


def test_json_args_nested_deeper_than_the_limit_are_missing_and_counted(tb):
    def nested(levels: int) -> list:
        value: list = []
        for _ in range(levels - 1):
            value = [value]
        return value

    trace = tb.load(
        [
            tb.cpu_op("a", 0, 1, args={"Input Dims": nested(MAX_ARG_DEPTH)}),
            tb.cpu_op("b", 2, 1, args={"Input Dims": nested(MAX_ARG_DEPTH + 1)}),
        ]
    )
    dims = trace.events["input_dims"].tolist()
    assert dims[0] == "[" * MAX_ARG_DEPTH + "]" * MAX_ARG_DEPTH
    assert dims[1] != dims[1]  # NaN: missing
    assert dict(trace.bad_values) == {"Input Dims": 1}


@pytest.mark.parametrize(
    ("text", "limit", "deeper"),
    [
        (b"[[1]]", 2, False),
        (b"[[[1]]]", 2, True),
        (b'{"a":{"b":{}}}', 2, True),
        (b'["[[[[[[[[", "]]]"]', 1, False),  # brackets inside strings do not nest
        (b'["\\"[[[[", [1]]', 1, True),  # an escaped quote does not end the string
        (b"[[],[],[],[],[]]", 2, False),  # many brackets, shallow
    ],
)
def test_nesting_depth_is_measured_outside_strings(text: bytes, limit: int, deeper: bool):
    assert nested_deeper_than(text, limit) is deeper


def _raws(*texts: bytes) -> list[msgspec.Raw]:
    return [msgspec.Raw(t) for t in texts]


def test_errors_name_the_event_by_its_index_in_trace_events():
    decoder = EventDecoder(Path("t.json"))
    good = b'{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}'
    with pytest.raises(TraceError) as info:
        decoder.add_batch(_raws(good, good, b'{"ph": "X", "ts": NaN}'), start=16_384)
    message = str(info.value)
    assert "event 16386 of 'traceEvents' (from 0)" in message
    assert "NaN is not valid JSON (at byte 18 of the event)" in message


def test_an_event_nested_too_deeply_is_named_by_index():
    decoder = EventDecoder(Path("t.json"))
    deep = b'{"name": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    with pytest.raises(TraceError) as info:
        decoder.add_batch(_raws(b"{}", deep), start=8192)
    assert "nested too deeply in event 8193 of 'traceEvents'" in str(info.value)


def test_invalid_utf8_and_a_malformed_event_in_one_batch_are_both_handled(tmp_path: Path):
    path = tmp_path / "both.json"
    path.write_bytes(
        b'{"traceEvents": ['
        b'{"ph": "X", "cat": "kernel", "name": "gemm_\xff", "pid": 0, "tid": 7, "ts": 1, "dur": 2},'
        b"[1, 2],"
        b'{"ph": "X", "cat": "kernel", "name": "ok", "pid": 0, "tid": 7, "ts": 5, "dur": 1}]}'
    )
    trace = load_trace(path)
    assert trace.events["name"].tolist()[0] == "gemm_\ufffd"
    assert trace.events["name"].tolist()[2] == "ok"
    assert dict(trace.skipped) == {"not_an_object": 1}
    assert trace.repaired_utf8_batches == 1
