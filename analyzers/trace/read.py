"""The JSON text of a trace file, read only when it can be a trace and within the size limit.

Only regular files are read, opened the way every input file is (input_file.py): a FIFO,
device or socket named `*.json` is refused without being touched.

The size limit (`ROOFLENS_MAX_TRACE_MB`, MiB, default 4096) bounds the JSON text, not the file:
a plain file is checked against its size before any byte is read, and a gzip file while it
inflates, so a few MB of gzip that would inflate to gigabytes stops at the limit instead of
exhausting memory. Every command and tool loads through `load_trace`, hence through here.
"""

from __future__ import annotations

import math
import os
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BufferedReader
from pathlib import Path

from . import input_file
from .errors import TraceError

MAX_TRACE_ENV = "ROOFLENS_MAX_TRACE_MB"
DEFAULT_MAX_TRACE_MB = 4096.0
MIB = 2**20
SUFFIXES = (".json", ".json.gz")
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20  # bytes read per step (a read allocates its full size up front)
_STEP = 1 << 26  # most text one inflate call may return: bounds the temporary copy


def trace_size_limit_bytes() -> int:
    """The largest JSON text a trace may have, from ROOFLENS_MAX_TRACE_MB ("inf": no limit).

    Raises ValueError when the variable is set to anything but a positive number.
    """
    text = os.environ.get(MAX_TRACE_ENV, "").strip()
    if not text:
        return int(DEFAULT_MAX_TRACE_MB * MIB)
    try:
        mb = float(text)
    except ValueError:
        mb = math.nan
    if not mb > 0:
        raise ValueError(f"{MAX_TRACE_ENV}={text!r} is not a positive number of MB")
    return sys.maxsize if math.isinf(mb) else int(mb * MIB)


def _limit_text(limit: int) -> str:
    return f"{round(limit / MIB, 4):g} MB limit ({MAX_TRACE_ENV})"


def _too_big(path: Path, problem: str, limit: int) -> TraceError:
    return TraceError(
        path,
        problem.format(limit=_limit_text(limit)),
        f"Profile fewer steps, or raise {MAX_TRACE_ENV} (in MB) where rooflens is started",
    )


def read_trace_bytes(
    path: Path, on_read: Callable[[bytes], object] | None = None
) -> bytes | bytearray:
    """The JSON text of a trace file, gunzipped when needed; TraceError for anything else.

    `on_read` is handed every block of the file's own bytes, in order, as it is read (the
    compressed bytes of a .gz): a caller hashes the file without reading it a second time.
    """
    name = path.name.lower()
    if not name.endswith(SUFFIXES):
        raise TraceError(
            path,
            f"unsupported file type '{''.join(path.suffixes) or path.name}'",
            "rooflens reads PyTorch profiler traces saved as .json or .json.gz",
        )
    try:
        limit = trace_size_limit_bytes()
    except ValueError as exc:
        raise TraceError(path, str(exc), "Set it to a size in MB, e.g. 4096") from None
    with _open_regular(path) as opened:
        f = opened if on_read is None else _Tee(opened, on_read)
        size = os.fstat(f.fileno()).st_size
        if f.peek(2)[:2] == GZIP_MAGIC:
            data = _inflate(path, f, limit)
        elif name.endswith(".gz"):
            raise TraceError(
                path,
                "is named .json.gz but is not gzip-compressed",
                "Rename it to .json if it holds plain JSON",
            )
        elif size > limit:
            raise _too_big(path, f"its JSON is {size / MIB:.2f} MB, over the {{limit}}", limit)
        else:
            data = _read_bounded(path, f, size, limit)
    if not data:
        raise TraceError(path, "is empty (0 bytes of JSON)", "Re-export the trace")
    return data


class _Tee:
    """A reader that hands every block it reads to `on_read` too (peeks are not reads)."""

    def __init__(self, f: BufferedReader, on_read: Callable[[bytes], object]) -> None:
        self._f = f
        self._on_read = on_read

    def fileno(self) -> int:
        return self._f.fileno()

    def peek(self, size: int = 0) -> bytes:
        return self._f.peek(size)

    def read(self, size: int = -1) -> bytes:
        data = self._f.read(size)
        if data:
            self._on_read(data)
        return data


def require_regular_file(path: Path) -> Path:
    """`path` if it is a regular file; a TraceError naming what it is otherwise. For callers
    that must know before reading (hashing a trace to recognise it)."""
    with _as_trace_error():
        input_file.require_regular_file(path, "trace file")
    return path


def _open_regular(path: Path) -> BufferedReader:
    """Open `path` for reading only if it is a regular file (input_file.py checks it)."""
    with _as_trace_error():
        return input_file.open_regular(path, "trace file")


@contextmanager
def _as_trace_error() -> Iterator[None]:
    try:
        yield
    except input_file.InputFileError as exc:
        raise TraceError(exc.path, exc.problem, exc.hint) from None


def _read_bounded(path: Path, f: BufferedReader | _Tee, size: int, limit: int) -> bytes | bytearray:
    """The whole file in one read; a file that grew past its stat size is read in chunks."""
    data = f.read(size + 1)
    if len(data) <= size:
        return data
    grown = bytearray(data)
    while chunk := f.read(_CHUNK):
        grown += chunk
        if len(grown) > limit:
            raise _too_big(path, "it grew past the {limit} while being read", limit)
    return grown


def _inflate(path: Path, f: BufferedReader | _Tee, limit: int) -> bytearray:
    """Gunzip every member of the stream into one buffer, stopping past `limit` bytes.

    Output never exceeds the limit by more than one byte: each step asks zlib for at most
    what is left. One growing bytearray (no join at the end) keeps the peak at ~1x the text,
    plus one step's output.
    """
    out = bytearray()
    inflater = zlib.decompressobj(wbits=31)
    data = f.read(_CHUNK)
    while data or not inflater.eof:
        step = min(limit + 1 - len(out), _STEP)
        try:
            part = inflater.decompress(data, step)
        except zlib.error as exc:
            raise TraceError(path, f"corrupt gzip data ({exc})", "Re-export the trace") from None
        out += part
        if len(out) > limit:
            raise _too_big(path, "its JSON inflates past the {limit}; decompression stopped", limit)
        if not inflater.eof:
            # capped output may leave more inside zlib even with all input consumed
            data = inflater.unconsumed_tail or (b"" if len(part) == step else f.read(_CHUNK))
            if not data and len(part) < step:
                break  # the file ended inside the stream
            continue
        data = inflater.unused_data or f.read(_CHUNK)  # another member may follow
        if len(data) < len(GZIP_MAGIC):
            data += f.read(_CHUNK)
        if data.startswith(GZIP_MAGIC):
            inflater = zlib.decompressobj(wbits=31)
        elif _only_padding(data, f):
            break
        else:
            raise TraceError(
                path, "has data after the end of its gzip stream", "Re-export the trace"
            )
    if not inflater.eof:
        raise TraceError(
            path,
            "the gzip stream is truncated (the file ends before the compressed data does)",
            "The copy is incomplete; copy or download the trace again",
        )
    return out


def _only_padding(data: bytes, f: BufferedReader | _Tee) -> bool:
    """True when the rest of the file is NUL bytes (tape-style padding gzip tolerates)."""
    while data:
        if data.strip(b"\x00"):
            return False
        data = f.read(_CHUNK)
    return True
