"""A trace file read, inflated and hashed on threads from the moment `report` or `analyze` is
parsed (docs/architecture.md#start-up).

Reading, gunzipping and hashing release the GIL, so on a second core they overlap the
engine's import (about a second) and, for the hash, the decoding that follows; the file is
read once. This module imports only what the read needs: it is started before the engine is.
Errors wait for the caller: the command checks its other arguments first, then `text()` or
`identity()` raises the TraceError a direct read would have raised.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.read import read_trace_bytes, require_regular_file

if TYPE_CHECKING:
    from rooflens.analyzers.pipeline.ledger import TraceIdentity


class TraceRead:
    """One trace file: its JSON text (`text`, handed over once) and its identity (`identity`:
    size, mtime and SHA-256 of the bytes read)."""

    def __init__(self, trace: Path) -> None:
        self.trace = trace
        self._stat: os.stat_result | None = None
        self._text: bytes | bytearray | None = None
        self._error: TraceError | None = None
        self._digest = hashlib.sha256()
        self._bytes_read = 0  # the file's own bytes so far (the hasher counts them)
        self._read_done = False
        self._blocks: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._hasher = threading.Thread(target=self._hash, daemon=True, name="rooflens-hash")
        self._reader = threading.Thread(target=self._read, daemon=True, name="rooflens-read")
        self._hasher.start()
        self._reader.start()

    def _read(self) -> None:
        try:
            self._stat = require_regular_file(self.trace).stat()
            self._text = read_trace_bytes(self.trace, self._blocks.put)
        except TraceError as exc:
            self._error = exc
        except OSError as exc:
            self._error = TraceError(self.trace, (exc.strerror or str(exc)).lower())
        finally:
            self._read_done = True
            self._blocks.put(None)

    def _hash(self) -> None:
        while (block := self._blocks.get()) is not None:
            self._digest.update(block)
            self._bytes_read += len(block)
            del block  # a 575 MB file is one block: let it go as soon as it is hashed

    def progress(self) -> str | None:
        """How far the read is, for a progress line: the file's bytes read, then the JSON
        being decoded (None before the file's size is known)."""
        if self._stat is None:
            return None
        total = self._stat.st_size / 2**20
        if self._read_done:
            return f"decoding the {total:,.0f} MB file's JSON"
        return f"read {self._bytes_read / 2**20:,.0f} of {total:,.0f} MB"

    def text(self) -> bytes | bytearray:
        """The JSON text, once (the caller owns it then); the read's TraceError otherwise."""
        self._reader.join()
        if self._error is not None:
            raise self._error
        text, self._text = self._text, None
        if text is None:
            raise RuntimeError("the trace text was handed over already")
        return text

    def identity(self) -> TraceIdentity:
        """Size, mtime and SHA-256 of the file as read; the read's TraceError otherwise."""
        from rooflens.analyzers.pipeline.ledger import TraceIdentity

        self._reader.join()
        if self._error is not None:
            raise self._error
        self._hasher.join()
        assert self._stat is not None  # set before any byte is read
        return TraceIdentity(
            name=self.trace.name,
            size=self._stat.st_size,
            mtime_ns=self._stat.st_mtime_ns,
            sha256=self._digest.hexdigest(),
        )
