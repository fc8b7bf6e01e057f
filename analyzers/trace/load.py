"""Read a Kineto trace (.json / .json.gz) straight into one columnar events table.

The top level is decoded once with every event left as a zero-copy `msgspec.Raw` slice; the
events are then decoded in batches into typed structs, turned into numpy columns and dropped.
So the only per-event Python objects alive at any time are one batch's, and the free-form
`metadata` object is skipped without being parsed.

Bad input never escapes as a traceback: it is refused with a TraceError, or loaded with the
damage skipped and counted for trace health.
* The file must be a regular file within ROOFLENS_MAX_TRACE_MB (read.py).
* Its text must be UTF-8 JSON. A UTF-8 BOM is skipped; invalid UTF-8 and lone surrogate
  escapes become U+FFFD (counted as repairs); UTF-16/32, NaN/Infinity literals and the
  like are refused with the problem named (json_text.py).
* Nesting depth is bounded by msgspec's recursion guard (about 1000 levels, anywhere,
  `metadata` included): skipping a value still walks it, so a deep value cannot be ignored
  cheaply and the file is refused. Kineto nests fewer than ten levels. Kept JSON args
  (shapes...) deeper than 16 are dropped as malformed (columns.py).
* An entry of `traceEvents` that is not an object is skipped and counted; an `args` that is
  not an object is treated as absent and counted, so one odd event never rejects a trace
  (decode.py). Timed events without a name or a sane time are skipped (skip.py).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import msgspec
import pandas as pd

from . import json_text
from .decode import EventDecoder, too_deep
from .errors import TraceError
from .range_counters import (
    RANGE_CATEGORY,
    RangeCounters,
    read_range_counters,
)
from .read import read_trace_bytes
from .schema import (
    DeviceProperties,
    DistributedInfo,
    TraceHeader,
)
from .skip import skip_unusable

BATCH_EVENTS = 8_192  # bounds the per-batch working set (about 15 MB of objects)
_T = TypeVar("_T")
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
    repaired_utf8_batches: int  # batches (or the whole text) whose invalid text was repaired
    json_bytes: int
    skipped: MappingProxyType[str, int] = field(default_factory=lambda: MappingProxyType({}))
    counters: RangeCounters | None = None  # a CUPTI range-profiler trace's (range_counters.py)

    def label(self, ident: int) -> str:
        """Text of a pid/tid that the trace wrote as a string ("Spans"), else the number."""
        return self.id_labels.get(ident, str(ident))


def load_trace(
    path: str | Path,
    *,
    on_read: Callable[[bytes], object] | None = None,
    text: Callable[[], bytes | bytearray] | None = None,
) -> Trace:
    """Decode a trace file. Raises TraceError with a plain message for any unusable input.

    `on_read` sees the file's bytes as they are read (read.py), e.g. to hash them. `text`
    hands over the file's JSON text when it was read already (the CLI reads it while the
    engine is imported): a callable, so that no caller's frame keeps the text alive while
    the events are decoded."""
    path = Path(path)
    raw = read_trace_bytes(path, on_read) if text is None else text()
    json_bytes = len(raw)
    with gc_paused():
        header, repaired = _decode_header(path, raw)
        del raw  # the event slices below keep the text alive exactly as long as needed
        meta = _meta(header)
        raws, header.traceEvents = header.traceEvents or [], None
        decoder = EventDecoder(path)
        decoder.repaired_batches += repaired
        for start in range(0, len(raws), BATCH_EVENTS):
            decoder.add_batch(raws[start : start + BATCH_EVENTS], start)
        # a range-profiler trace keeps its raw events until its counters are read (rare, small)
        cats = decoder.text.get("cat")
        ranges = raws if cats is not None and RANGE_CATEGORY in cats.table else None
        del raws  # the slices pin the whole JSON text; let it go before assembling columns
        events = decoder.table()
        counters = read_range_counters(ranges, events) if ranges is not None else None
        del ranges
    _refuse_non_trace(path, events, decoder.not_objects)
    skipped = skip_unusable(events)
    if decoder.not_objects:
        skipped = {"not_an_object": decoder.not_objects, **skipped}
    return Trace(
        path=path,
        events=events,
        meta=meta,
        id_labels=MappingProxyType({v: k for k, v in decoder.ids.labels.items()}),
        bad_values=MappingProxyType(dict(decoder.bad.counts)),
        repaired_utf8_batches=decoder.repaired_batches,
        json_bytes=json_bytes,
        skipped=MappingProxyType(skipped),
        counters=counters,
    )


def _refuse_non_trace(path: Path, events: pd.DataFrame, not_objects: int) -> None:
    if len(events) and not_objects == len(events):
        raise TraceError(
            path,
            f"is JSON but not a Chrome trace: none of its {len(events)} 'traceEvents' entries "
            "is an object",
            "Pass the file written by torch.profiler (export_chrome_trace or on_trace_ready)",
        )
    if len(events) and events["ph"].isna().all():
        raise TraceError(
            path,
            "is JSON but not a Chrome trace: none of its entries has a 'ph' (phase) field",
            "Pass the file written by torch.profiler (export_chrome_trace or on_trace_ready)",
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


def _decode_header(path: Path, raw: bytes | bytearray) -> tuple[TraceHeader, int]:
    """The top level with events as raw slices, and how many whole-text repairs it took."""
    text = json_text.without_bom(raw)
    encoding = json_text.wrong_encoding(text)
    if encoding:
        raise TraceError(
            path, f"the file is {encoding} encoded, not UTF-8", "Re-save it as UTF-8 JSON"
        )
    repairs = 0
    while True:
        try:
            return _decode_top(path, text), repairs
        except msgspec.DecodeError as exc:
            # each kind of repair removes its problem for good: at most one of each
            fixed = json_text.repair(text, exc) if repairs < len(json_text.REPAIRS) else None
            if fixed is None:
                raise TraceError(path, *json_text.explain(text, exc)) from None
            text, repairs = fixed, repairs + 1


def _decode_top(path: Path, text: bytes | bytearray | memoryview) -> TraceHeader:
    try:
        top = msgspec.json.decode(text, type=TraceHeader | list[msgspec.Raw])
    except msgspec.ValidationError as exc:
        raise TraceError(
            path,
            f"is JSON but not a Chrome trace ({exc})",
            "Expected an object with a 'traceEvents' list, as torch.profiler writes",
        ) from None
    except RecursionError:
        raise too_deep(path, "") from None
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
