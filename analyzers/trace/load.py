"""Read a Kineto trace (.json / .json.gz) straight into one columnar events table.

The top level is decoded once with every event left as a zero-copy `msgspec.Raw` slice; the
events are then decoded in batches into typed structs, turned into numpy columns and dropped.
So the only per-event Python objects alive at any time are one batch's, and the free-form
`metadata` object is skipped without being parsed.
"""

from __future__ import annotations

import gc
import gzip
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec
import pandas as pd

from rooflens.analyzers.trace.decode import EventDecoder
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.schema import (
    DeviceProperties,
    DistributedInfo,
    TraceHeader,
)

BATCH_EVENTS = 8_192  # bounds the per-batch working set (about 15 MB of objects)
_T = TypeVar("_T")
SUFFIXES = (".json", ".json.gz")
_GZIP_MAGIC = b"\x1f\x8b"
_FLAG_KEYS = ("record_shapes", "with_stack", "with_modules", "with_flops", "profile_memory")
_VERSION_KEYS = (
    "cuda_runtime_version",
    "cuda_driver_version",
    "cupti_version",
    "hip_runtime_version",
    "hip_driver_version",
    "roctracer_version",
)


@dataclass(frozen=True, slots=True)
class TraceMeta:
    """The top-level facts of a trace that later stages and trace health use."""

    devices: tuple[DeviceProperties, ...]
    distributed: DistributedInfo | None
    flags: MappingProxyType[str, bool | None]
    versions: MappingProxyType[str, str]
    schema_version: str | None
    base_time_ns: int | None


@dataclass(frozen=True, slots=True)
class Trace:
    """A decoded trace: one row per `traceEvents` entry, `uid` = its position in the file."""

    path: Path
    events: pd.DataFrame
    meta: TraceMeta
    id_labels: MappingProxyType[int, str]
    bad_values: MappingProxyType[str, int]
    repaired_utf8_batches: int
    json_bytes: int

    def label(self, ident: int) -> str:
        """Text of a pid/tid that the trace wrote as a string ("Spans"), else the number."""
        return self.id_labels.get(ident, str(ident))


def load_trace(path: str | Path) -> Trace:
    """Decode a trace file. Raises TraceError with a plain message for any unusable input."""
    path = Path(path)
    raw = read_trace_bytes(path)
    json_bytes = len(raw)
    with gc_paused():
        header = _decode_header(path, raw)
        del raw  # the event slices below keep the text alive exactly as long as needed
        meta = _meta(header)
        raws, header.traceEvents = header.traceEvents or [], None
        decoder = EventDecoder(path)
        for start in range(0, len(raws), BATCH_EVENTS):
            decoder.add_batch(raws[start : start + BATCH_EVENTS])
        del raws  # the slices pin the whole JSON text; let it go before assembling columns
        events = decoder.table()
    if len(events) and events["ph"].isna().all():
        raise TraceError(
            path,
            "is JSON but not a Chrome trace: none of its entries has a 'ph' (phase) field",
            "Pass the file written by torch.profiler (export_chrome_trace or on_trace_ready)",
        )
    return Trace(
        path=path,
        events=events,
        meta=meta,
        id_labels=MappingProxyType({v: k for k, v in decoder.ids.labels.items()}),
        bad_values=MappingProxyType(dict(decoder.bad.counts)),
        repaired_utf8_batches=decoder.repaired_batches,
        json_bytes=json_bytes,
    )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause cyclic GC while a batch of per-event objects is alive (3-4x on big traces).

    The objects are acyclic (structs with gc=False, tuples of scalars), so nothing is leaked;
    collection resumes afterwards if it was on before.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_trace_bytes(path: Path) -> bytes:
    """The JSON text of a trace file, gunzipped when needed."""
    name = path.name.lower()
    if not name.endswith(SUFFIXES):
        raise TraceError(
            path,
            f"unsupported file type '{''.join(path.suffixes) or path.name}'",
            "rooflens reads PyTorch profiler traces saved as .json or .json.gz",
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(path, "file not found", "Check the path") from None
    except IsADirectoryError:
        raise TraceError(path, "is a folder, not a trace file") from None
    except PermissionError:
        raise TraceError(path, "permission denied while reading the file") from None
    if data.startswith(_GZIP_MAGIC):
        return _gunzip(path, data)
    if name.endswith(".gz"):
        raise TraceError(
            path,
            "is named .json.gz but is not gzip-compressed",
            "Rename it to .json if it holds plain JSON",
        )
    return data


def _gunzip(path: Path, data: bytes) -> bytes:
    try:
        return gzip.decompress(data)
    except EOFError:
        raise TraceError(
            path,
            "the gzip stream is truncated (the file ends before the compressed data does)",
            "The copy is incomplete; copy or download the trace again",
        ) from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise TraceError(path, f"corrupt gzip data ({exc})", "Re-export the trace") from None


def _decode_header(path: Path, raw: bytes) -> TraceHeader:
    try:
        top = msgspec.json.decode(raw, type=TraceHeader | list[msgspec.Raw])
    except msgspec.ValidationError as exc:
        raise TraceError(
            path,
            f"is JSON but not a Chrome trace ({exc})",
            "Expected an object with a 'traceEvents' list, as torch.profiler writes",
        ) from None
    except msgspec.DecodeError as exc:
        hint = "The file looks cut short; re-export it" if "truncated" in str(exc) else ""
        raise TraceError(path, f"invalid JSON ({exc})", hint) from None
    if isinstance(top, list):  # Chrome's "JSON array" form: the events alone
        return TraceHeader(traceEvents=top)
    if top.traceEvents is None:
        raise TraceError(
            path,
            "is JSON but not a Chrome trace: it has no 'traceEvents' list",
            "Pass the file written by torch.profiler (export_chrome_trace or on_trace_ready)",
        )
    return top


def _meta(header: TraceHeader) -> TraceMeta:
    flags = {k: _as_flag(getattr(header, k)) for k in _FLAG_KEYS}
    versions = {k: str(v) for k in _VERSION_KEYS if (v := getattr(header, k)) is not None}
    base = header.baseTimeNanoseconds
    devices = header.deviceProperties if isinstance(header.deviceProperties, list) else []
    return TraceMeta(
        devices=tuple(d for d in map(_lenient(DeviceProperties), devices) if d is not None),
        distributed=_lenient(DistributedInfo)(header.distributedInfo),
        flags=MappingProxyType(flags),
        versions=MappingProxyType(versions),
        schema_version=None if header.schemaVersion is None else str(header.schemaVersion),
        base_time_ns=base if isinstance(base, int) else None,
    )


def _lenient(kind: type[_T]) -> Callable[[Any], _T | None]:
    """Convert a header object, or give None when it does not fit (never reject the trace)."""

    def convert(value: Any) -> _T | None:
        if value is None:
            return None
        try:
            return msgspec.convert(value, kind, strict=False)
        except msgspec.ValidationError:
            return None

    return convert


def _as_flag(value: Any) -> bool | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes"}
    return bool(value)
