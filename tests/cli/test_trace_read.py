"""The trace read on threads while the engine is imported (cli/trace_read.py)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from rooflens.analyzers.pipeline.ledger import TraceIdentity
from rooflens.analyzers.trace.errors import TraceError
from rooflens.cli.trace_read import TraceRead

TEXT = b'{"traceEvents": []}'


def test_the_text_and_the_identity_are_the_file_s(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(gzip.compress(TEXT, mtime=0))
    read = TraceRead(trace)
    assert read.text() == TEXT  # gunzipped
    identity = read.identity()
    assert identity == TraceIdentity.of(trace)
    assert identity.sha256 == hashlib.sha256(trace.read_bytes()).hexdigest()  # the file's bytes
    with pytest.raises(RuntimeError, match="handed over already"):
        read.text()  # the caller owns the text: it is not kept twice


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.json", None, "file not found"),
        ("t.txt", b"{}", "unsupported file type"),
        ("t.json.gz", b"{}", "not gzip-compressed"),
    ],
)
def test_errors_wait_for_the_caller(tmp_path: Path, name: str, content, message: str) -> None:
    trace = tmp_path / name
    if content is not None:
        trace.write_bytes(content)
    read = TraceRead(trace)  # never raises: the command checks its other arguments first
    with pytest.raises(TraceError, match=message):
        read.text()
    with pytest.raises(TraceError, match=message):
        read.identity()
