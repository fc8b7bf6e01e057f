"""Reading a trace file: regular files only, within ROOFLENS_MAX_TRACE_MB, gzip streamed."""

from __future__ import annotations

import gzip
import json
import os
import socket
import sys
import tracemalloc
from pathlib import Path

import pytest

from rooflens.analyzers.trace import read
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.load import load_trace
from rooflens.analyzers.trace.read import MAX_TRACE_ENV, MIB, trace_size_limit_bytes

TRACE = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1,
                          "ts": 1, "dur": 2}]}  # fmt: skip


def _refused(path: Path, *fragments: str) -> str:
    with pytest.raises(TraceError) as info:
        load_trace(path)
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


# --- the limit ----------------------------------------------------------------------------


def test_the_limit_defaults_to_4096_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_TRACE_ENV, raising=False)
    assert trace_size_limit_bytes() == 4096 * 2**20


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1", 2**20), ("0.5", 2**19), (" 2 ", 2 * 2**20), ("inf", sys.maxsize), ("", 4096 * 2**20)],
)
def test_the_limit_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, text: str, expected: int
) -> None:
    monkeypatch.setenv(MAX_TRACE_ENV, text)
    assert trace_size_limit_bytes() == expected


@pytest.mark.parametrize("text", ["abc", "0", "-3", "nan"])
def test_a_limit_that_is_not_a_positive_number_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str
) -> None:
    monkeypatch.setenv(MAX_TRACE_ENV, text)
    with pytest.raises(ValueError, match=MAX_TRACE_ENV):
        trace_size_limit_bytes()
    path = tmp_path / "t.json"
    path.write_text(json.dumps(TRACE))
    _refused(path, f"{MAX_TRACE_ENV}={text!r} is not a positive number of MB")


def test_a_plain_file_over_the_limit_is_refused_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(MAX_TRACE_ENV, "1")
    path = tmp_path / "big.json"
    path.write_bytes(b"not json at all " * (MIB // 8))  # 2 MiB: invalid, but never parsed
    _refused(path, "its JSON is 2.00 MB, over the 1 MB limit (ROOFLENS_MAX_TRACE_MB)")


def test_a_file_exactly_at_the_limit_is_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(TRACE))
    monkeypatch.setenv(MAX_TRACE_ENV, repr(path.stat().st_size / MIB))
    assert len(load_trace(path).events) == 1
    monkeypatch.setenv(MAX_TRACE_ENV, repr((path.stat().st_size - 1) / MIB))
    _refused(path, "over the")


def test_gzip_inflation_stops_at_the_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(MAX_TRACE_ENV, "1")
    text = b'{"traceEvents": [], "pad": "' + b" " * (64 * MIB) + b'"}'
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(text, compresslevel=9))
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        _refused(path, "its JSON inflates past the 1 MB limit", "decompression stopped")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MIB  # never the 64 MiB the file would inflate to


@pytest.mark.parametrize("step", [1, 7, 1000])
def test_gzip_inflated_in_small_steps_gives_the_same_text(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, step: int
) -> None:
    text = json.dumps({"traceEvents": TRACE["traceEvents"] * 50, "pad": " " * 5000}).encode()
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text))
    monkeypatch.setattr(read, "_STEP", step)  # output capped: zlib keeps the rest
    monkeypatch.setattr(read, "_CHUNK", 64)  # input in many reads
    assert bytes(read.read_trace_bytes(path)) == text
    path.write_bytes(gzip.compress(text)[:-9])
    _refused(path, "the gzip stream is truncated")


def test_concatenated_gzip_members_are_one_text(tmp_path: Path) -> None:
    text = json.dumps(TRACE).encode()
    path = tmp_path / "two.json.gz"
    path.write_bytes(gzip.compress(text[:20]) + gzip.compress(text[20:]) + b"\x00" * 64)
    assert load_trace(path).events["name"].tolist() == ["a"]


def test_data_after_the_gzip_stream_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tail.json.gz"
    path.write_bytes(gzip.compress(json.dumps(TRACE).encode()) + b"junk")
    _refused(path, "has data after the end of its gzip stream")


# --- file kinds ---------------------------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_named_json_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "zero.json"
    path.symlink_to("/dev/zero")  # reading it would never end
    _refused(path, "is a character device, not a regular file")


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="no unix sockets")
def test_a_socket_named_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        _refused(path, "is a socket, not a regular file")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_a_file_swapped_for_a_fifo_after_stat_is_caught_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "swap.json"
    path.write_text(json.dumps(TRACE))
    real_open = os.open

    def swap_then_open(target: object, flags: int, *args: object) -> int:
        if Path(str(target)) == path:  # the race: replaced between stat and open
            path.unlink()
            os.mkfifo(path)
            assert flags & os.O_NONBLOCK  # else this open would block forever
        return real_open(target, flags, *args)

    monkeypatch.setattr(read.os, "open", swap_then_open)
    _refused(path, "is a FIFO (named pipe), not a regular file")


def test_an_empty_file_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    _refused(path, "is empty (0 bytes of JSON)")


def test_a_path_through_a_file_is_named_not_raised(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    _refused(tmp_path / "file" / "t.json", "cannot be opened (Not a directory)")


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_on_read_sees_every_byte_of_the_file_once_in_order(tmp_path: Path, name: str) -> None:
    text = json.dumps(TRACE).encode()
    path = tmp_path / name
    # two gzip members: the reader goes on after the first one ends
    path.write_bytes(gzip.compress(text[:20]) + gzip.compress(text[20:]) if ".gz" in name else text)
    blocks: list[bytes] = []
    assert read.read_trace_bytes(path, blocks.append) == text
    assert b"".join(blocks) == path.read_bytes()
