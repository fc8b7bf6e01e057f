"""Naming what is wrong with a trace's JSON text, and the repairs that are certain."""

from __future__ import annotations

import msgspec
import pytest

from rooflens.analyzers.trace import json_text


def _explain(raw: bytes) -> str:
    with pytest.raises(msgspec.DecodeError) as info:
        msgspec.json.decode(raw)
    return " | ".join(json_text.explain(raw, info.value))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"traceEvents": []}', None),
        ("{}".encode("utf-16-le"), "UTF-16"),
        ("{}".encode("utf-16-be"), "UTF-16"),
        ("{}".encode("utf-16"), "UTF-16"),  # with its byte-order mark
        ("{}".encode("utf-32-le"), "UTF-32"),
        ("{}".encode("utf-32-be"), "UTF-32"),
        ("{}".encode("utf-32"), "UTF-32"),
        (b"\xff\xfe", "UTF-16"),
        (b"{", None),
    ],
)
def test_utf16_and_utf32_are_told_apart_from_utf8(raw: bytes, expected: str | None) -> None:
    assert json_text.wrong_encoding(raw) == expected


def test_a_utf8_bom_is_skipped_without_copying() -> None:
    raw = b'\xef\xbb\xbf{"a": 1}'
    view = json_text.without_bom(raw)
    assert isinstance(view, memoryview) and bytes(view) == b'{"a": 1}'
    assert json_text.without_bom(b"{}") == b"{}"


@pytest.mark.parametrize(
    ("raw", "repaired"),
    [
        (rb'"a\ud800b"', rb'"a\ufffdb"'),  # lone high
        (rb'"a\udc00b"', rb'"a\ufffdb"'),  # lone low
        (rb'"\ud83d\ude00"', rb'"\ud83d\ude00"'),  # a valid pair is kept
        (rb'"\ud800\ud83d\ude00"', rb'"\ufffd\ud83d\ude00"'),  # high, then a pair
        (rb'"\\ud800"', rb'"\\ud800"'),  # an escaped backslash, then text: no escape at all
        (rb'"\\\ud800"', rb'"\\\ufffd"'),  # an escaped backslash, then a lone escape
        (rb'"\uD800"', rb'"\ufffd"'),  # upper-case hex
    ],
)
def test_lone_surrogate_escapes_become_replacement_characters(raw: bytes, repaired: bytes) -> None:
    assert json_text.repair_lone_surrogates(raw) == repaired
    assert len(repaired) == len(raw)  # byte offsets of later errors stay true
    assert json_text.has_lone_surrogates(raw) is (raw != repaired)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"a":NaN}', "NaN is not valid JSON (at byte 5)"),
        (b'{"a":Infinity}', "Infinity is not valid JSON (at byte 5)"),
        (b'{"a":-Infinity}', "-Infinity is not valid JSON (at byte 5)"),
        (b'{"a":"x\x01"}', "a raw control character (0x01) inside a string at byte 7"),
        (b'{"a":', "the text ends before the JSON does | The file looks cut short"),
        (b"  \n ", "is empty (it holds only whitespace)"),
        (b'{"a" 1}', "expected ':' (byte 5); found '1'"),
    ],
)
def test_decode_errors_are_named(raw: bytes, expected: str) -> None:
    assert expected in _explain(raw)


def test_event_offsets_say_they_are_within_the_event() -> None:
    raw = b'{"ts":NaN}'
    with pytest.raises(msgspec.DecodeError) as info:
        msgspec.json.decode(raw)
    problem, _ = json_text.explain(raw, info.value, " of the event")
    assert problem == "NaN is not valid JSON (at byte 6 of the event)"


def test_only_invalid_utf8_and_lone_surrogates_are_repaired() -> None:
    def error(raw: bytes) -> msgspec.DecodeError:
        with pytest.raises(msgspec.DecodeError) as info:
            msgspec.json.decode(raw)
        return info.value

    bad_utf8 = b'{"a":"x\xffy"}'
    assert json_text.repair(bad_utf8, error(bad_utf8)) == b'{"a":"x\xef\xbf\xbdy"}'
    surrogate = rb'{"a":"\ud800"}'
    assert json_text.repair(surrogate, error(surrogate)) == rb'{"a":"\ufffd"}'
    nan = b'{"a":NaN}'
    assert json_text.repair(nan, error(nan)) is None
