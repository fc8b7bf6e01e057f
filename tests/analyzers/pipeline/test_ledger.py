"""The run ledger's seal: every artifact's hash, kept right as files change between seals."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from rooflens.analyzers.pipeline.ledger import RunRecord, TraceIdentity, seal, verify
from rooflens.analyzers.report.write_csv import atomic_write_bytes


def _record() -> RunRecord:
    trace = TraceIdentity(name="t.json", size=1, mtime_ns=0, sha256="0" * 64)
    return RunRecord(run_id="run-000000000001", trace=trace, trace_path="/t.json")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_each_seal_records_the_files_as_they_are_now(tmp_path: Path) -> None:
    atomic_write_bytes(tmp_path / "a.csv", b"first")
    record = seal(tmp_path, _record(), "loaded")
    assert record.artifacts == {"a.csv": _sha(b"first")}
    atomic_write_bytes(tmp_path / "a.csv", b"second")  # a later step replaces it
    (tmp_path / "sub").mkdir()
    atomic_write_bytes(tmp_path / "sub" / "b.json", b"{}")
    record = seal(tmp_path, record, "prepared")
    assert record.artifacts == {"a.csv": _sha(b"second"), "sub/b.json": _sha(b"{}")}
    assert record.steps == ["loaded", "prepared"]
    assert verify(tmp_path) == []


def test_a_file_rewritten_in_place_with_the_same_size_is_hashed_again(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"aaaa")
    record = seal(tmp_path, _record())
    path.write_bytes(b"bbbb")  # same inode, same size: only the mtime tells
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000))
    assert seal(tmp_path, record).artifacts == {"a.csv": _sha(b"bbbb")}


def test_verify_reads_every_file_again(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"aaaa")
    seal(tmp_path, _record())
    st = path.stat()
    path.write_bytes(b"bbbb")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # tampered, stat unchanged
    assert verify(tmp_path) == ["a.csv: changed after run run-000000000001 wrote it"]
