"""What is wrong with a trace's JSON text, in words a person can act on.

msgspec reports most problems as "invalid character (byte N)". This module looks at the bytes
to name the real one: a UTF-16 or UTF-32 file, a NaN or Infinity literal (Python's json.dump
writes them, JSON does not allow them), a raw control character inside a string, a file that
is empty or cut short. It runs only once decoding has failed, so it costs nothing on good
files.

Three problems are repaired instead of refused, because the fix is certain and loses nothing
the analysis reads: a UTF-8 byte-order mark (skipped: it is not part of the JSON), invalid
UTF-8 bytes and lone UTF-16 surrogate escapes such as `\\ud800` (names cut mid-character;
each bad byte or escape becomes U+FFFD, the replacement character, as in event batches).
"""

from __future__ import annotations

import re

import msgspec

UTF8_BOM = b"\xef\xbb\xbf"
_BYTE = re.compile(r"\(byte (\d+)\)")
# A \u escape of a surrogate, preceded by an even number of backslashes (so the backslash is
# not itself escaped); a high one followed by a low one is a valid pair and is kept.
_SURROGATE = re.compile(
    rb"(?<!\\)((?:\\\\)*)\\u[dD][89abAB][0-9a-fA-F]{2}(\\u[dD][c-fC-F][0-9a-fA-F]{2})?"
    rb"|(?<!\\)((?:\\\\)*)\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_LITERALS = (b"NaN", b"Infinity")


def without_bom(raw: bytes | bytearray) -> bytes | bytearray | memoryview:
    """The text after a UTF-8 byte-order mark (a zero-copy view), or the text itself."""
    return memoryview(raw)[len(UTF8_BOM) :] if raw[:3] == UTF8_BOM else raw


def wrong_encoding(raw: bytes | bytearray | memoryview) -> str | None:
    """'UTF-16' / 'UTF-32' when the text is not UTF-8, by its BOM or its NUL byte pattern.

    JSON text starts with an ASCII character, so in UTF-16 one of the first two bytes is NUL
    and in UTF-32 three of the first four are (RFC 4627, section 3).
    """
    head = bytes(raw[:4])
    if head in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or (
        len(head) == 4 and head.count(0) == 3
    ):
        return "UTF-32"
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or (len(head) >= 2 and 0 in head[:2]):
        return "UTF-16"
    return None


def has_lone_surrogates(raw: bytes | bytearray | memoryview) -> bool:
    if rb"\ud" not in raw and rb"\uD" not in raw:  # fast exit: no surrogate escape at all
        return False
    return any(m.group(2) is None for m in _SURROGATE.finditer(raw))


def repair_lone_surrogates(raw: bytes | bytearray | memoryview) -> bytes:
    """Each lone surrogate escape replaced by `\\ufffd` (same length: byte offsets hold)."""

    def replace(m: re.Match[bytes]) -> bytes:
        if m.group(2) is not None:
            return m.group(0)
        return (m.group(1) or m.group(3) or b"") + rb"\ufffd"

    return _SURROGATE.sub(replace, raw)


def _valid_utf8(raw: bytes | bytearray | memoryview) -> bytes:
    return bytes(raw).decode("utf-8", "replace").encode("utf-8")


# What a decode error can be repaired by, tried in order: (applies, repair).
REPAIRS = (
    (lambda raw, message: "UTF-8" in message, _valid_utf8),
    (lambda raw, message: has_lone_surrogates(raw), repair_lone_surrogates),
)


def repair(raw: bytes | bytearray | memoryview, exc: msgspec.DecodeError) -> bytes | None:
    """The text with the problem behind `exc` repaired, or None when it is not repairable."""
    for applies, fix in REPAIRS:
        if applies(raw, str(exc)):
            return fix(raw)
    return None


def explain(
    raw: bytes | bytearray | memoryview, exc: msgspec.DecodeError, where: str = ""
) -> tuple[str, str]:
    """(problem, hint) for a decode error of `raw`; `where` qualifies byte offsets."""
    text = str(exc)
    if "truncated" in text:
        if not bytes(raw).strip():
            return "is empty (it holds only whitespace)", "Re-export the trace"
        return (
            "invalid JSON: the text ends before the JSON does",
            "The file looks cut short (an interrupted export or copy); re-export it",
        )
    found = _BYTE.search(text)
    if found is None:
        return f"invalid JSON ({text})", ""
    return explain_at(raw, int(found.group(1)), text, where)


def explain_at(
    raw: bytes | bytearray | memoryview, at: int, text: str, where: str = ""
) -> tuple[str, str]:
    """(problem, hint) for a decode error at byte `at` of `raw`."""
    here = bytes(raw[at : at + 8])
    at_byte = f"at byte {at}{where}"
    for literal in _LITERALS:
        if here.startswith(literal):
            sign = "-" if at and raw[at - 1 : at] == b"-" else ""
            return (
                f"{sign}{literal.decode()} is not valid JSON ({at_byte})",
                "The exporter wrote a non-finite number; write null instead (Python: "
                "json.dump(..., allow_nan=False) finds them) and export again",
            )
    if here[:1] and here[0] < 0x20:
        return (
            f"a raw control character (0x{here[0]:02x}) inside a string {at_byte}; JSON "
            "allows it only escaped",
            f"Re-export the trace, or write the character as \\u{here[0]:04x}",
        )
    if "surrogate" in text or "hex escape" in text:
        return f"an invalid \\u escape in a string ({at_byte})", "Re-export the trace"
    char = here[:1].decode("latin-1")
    shown = f"; found {char!r}" if char.isascii() and char.isprintable() else ""
    return f"invalid JSON ({text}{where}{shown})", ""
