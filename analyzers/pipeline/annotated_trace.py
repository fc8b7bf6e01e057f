"""`annotated_trace.json.gz`: the run's trace, every byte of its events kept, with rooflens's
findings added as tracks of their own (docs/trace-viewer.md).

The trace is streamed, not parsed: its JSON text is inflated block by block, the findings'
events are put at the start of its `traceEvents` array (or of the array a trace in Chrome's
array form is), and the text is compressed again on the way out. Only the head of the
document up to that array is read as tokens, so a trace costs one inflate and one deflate
(at the fastest level) and holds no more than a block in memory. The file is written
atomically: a temporary file renamed into place.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from ..report.write_csv import atomic_file
from ..trace.read import GZIP_MAGIC

BLOCK = 1 << 20  # bytes read at a time, and of JSON text inflated at a time
MAX_HEAD = 1 << 28  # the array must open within this much text
LEVEL = 1  # deflate level: the fastest; a trace's text compresses ~10x even so
_SPACE = frozenset(b" \t\r\n")
_SPECIAL = re.compile(rb'[\[\]{}"]')
_STRING_REST = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)
_BOM = b"\xef\xbb\xbf"


class NotATraceDocument(ValueError):
    """The file's JSON has no `traceEvents` array (nor is it one array)."""


def write_annotated(source: Path, events: Sequence[dict[str, Any]], dest: Path) -> Path:
    """`source` (a trace, .json or .json.gz) with `events` first in its event array, gzipped
    into `dest` atomically."""
    extra = b",".join(
        json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode("utf-8") for e in events
    )
    with atomic_file(dest) as raw, _compressed(raw) as out:
        blocks = _text_blocks(source)
        head, rest = _head(blocks)
        out.write(head.before)
        if extra:
            out.write(extra + (b"," if not head.empty_array else b""))
        out.write(head.after)
        for block in rest:
            out.write(block)
    return dest


class Background:
    """A write on a thread of its own (inflating and deflating release the GIL, so it runs
    beside the plot and the report); `wait` joins it and raises what it raised."""

    def __init__(self, write: Callable[[], object]) -> None:
        self._error: BaseException | None = None

        def run() -> None:
            try:
                write()
            except BaseException as exc:  # handed to the caller by wait()
                self._error = exc

        self._thread = threading.Thread(target=run, name="rooflens-annotate", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        self._thread.join()
        if self._error is not None:
            raise self._error


class _Head:
    """The text up to and including the array's `[` (`before`), what was read after it
    (`after`), and whether the array is empty."""

    def __init__(self, before: bytes, after: bytes, empty_array: bool) -> None:
        self.before, self.after, self.empty_array = before, after, empty_array


def _compressed(raw: BinaryIO) -> gzip.GzipFile:
    return gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=LEVEL, mtime=0)


def _text_blocks(source: Path) -> Iterator[bytes]:
    """The JSON text of `source`, inflated when it is gzip (every member of it)."""
    with open(source, "rb") as f:
        magic = f.read(2)
        f.seek(0)
        if magic != GZIP_MAGIC:
            while block := f.read(BLOCK):
                yield block
            return
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = f.read(BLOCK)
        while True:
            chunk = inflate.decompress(data, BLOCK)  # at most BLOCK: the memory stays flat
            if chunk:
                yield chunk
            if inflate.eof:  # a member ended: another may start here
                data = inflate.unused_data
                if len(data) < len(GZIP_MAGIC):
                    data += f.read(BLOCK)
                if not data.startswith(GZIP_MAGIC):
                    return  # zero padding after the last member (the trace reader checked it)
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
            elif inflate.unconsumed_tail:
                data = inflate.unconsumed_tail
            elif len(chunk) == BLOCK:
                data = b""  # the output was capped: more may wait inside zlib
            else:
                data = f.read(BLOCK)
                if not data:
                    break
        tail = inflate.flush()
        if tail:
            yield tail


def _head(blocks: Iterator[bytes]) -> tuple[_Head, Iterator[bytes]]:
    """Read until the event array has opened and its first non-blank byte is known."""
    buf = bytearray()
    scan = _Scan()
    at: int | None = None
    for block in blocks:
        buf += block
        if at is None:
            at = scan.feed(buf)
        if at is not None:
            following = next((b for b in buf[at + 1 :] if b not in _SPACE), None)
            if following is not None:
                empty = following == ord("]")
                return _Head(bytes(buf[: at + 1]), bytes(buf[at + 1 :]), empty), blocks
        if len(buf) > MAX_HEAD:
            break
    raise NotATraceDocument("no traceEvents array found in the trace's JSON")


class _Scan:
    """Tokens of the document's head, read as far as the text allows: finds the offset of
    the `[` that opens the event array (the top-level `traceEvents` key's value, or the
    document itself when it is an array)."""

    def __init__(self) -> None:
        self.pos = 0
        self.started = False  # the document's first non-blank byte was read
        self.depth = 0
        self.key: bytes | None = None  # the last string at depth 1, while it may be a key
        self.wants_array = False  # read `"traceEvents":`; its value comes next

    def feed(self, buf: bytearray) -> int | None:
        if not self.started:
            if self.pos == 0 and buf.startswith(_BOM):
                self.pos = len(_BOM)
            while self.pos < len(buf) and buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos == len(buf) or len(buf) < len(_BOM):
                return None
            self.started = True
            if buf[self.pos] == ord("["):
                return self.pos
        while True:
            if self.wants_array:
                k = self._skip_space(buf, self.pos)
                if k is None:
                    return None
                if buf[k] == ord("["):
                    return k
                self.wants_array = False  # traceEvents is not an array: keep looking
            found = _SPECIAL.search(buf, self.pos)
            if found is None:
                self.pos = max(self.pos, len(buf))
                return None
            k, ch = found.start(), buf[found.start()]
            if ch == ord('"'):
                rest = _STRING_REST.match(buf, k + 1)
                if rest is None:
                    return None  # the string goes on in the next block
                self.pos = rest.end()
                if self.depth == 1:
                    colon = self._skip_space(buf, self.pos)
                    if colon is None:
                        self.pos = k  # read the string again with what follows
                        return None
                    if buf[colon] == ord(":") and buf[k : self.pos] == b'"traceEvents"':
                        self.pos = colon + 1
                        self.wants_array = True
                continue
            self.depth += 1 if ch in b"[{" else -1
            self.pos = k + 1

    @staticmethod
    def _skip_space(buf: bytearray, k: int) -> int | None:
        while k < len(buf) and buf[k] in _SPACE:
            k += 1
        return k if k < len(buf) else None
