"""Decode batches of raw Chrome-trace events into typed numpy column chunks.

Core fields (ph, cat, name, pid, tid, ts, dur, id) are decoded for every event; `args` are
decoded per family (operator, GPU, runtime, Python frame, metadata) with a struct holding that
family's fields only, and become columns that are missing elsewhere. Text becomes codes into
per-column string tables; integers take the narrowest dtype that holds them.

A batch is decoded in one call. Only when that fails are its events decoded one by one, with
numbers beyond float range read as ±inf: an entry that is not an object becomes an empty
event (counted in `not_objects`), an `args` that is not an object is treated as absent (counted
as a bad "args" value), and any other error names the event by its index in `traceEvents`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import is_not
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from .columns import (
    MISSING,
    BadValues,
    IdInterner,
    Interner,
    float_column,
    int_column,
)
from .errors import TraceError
from .json_text import explain
from .long_names import cap_names
from .schema import (
    ARG_SPECS,
    FAMILIES,
    FAMILY_ARGS,
    FAMILY_OF_CATEGORY,
    ArgSpec,
    Event,
    family_specs,
    normalise_category,
)

_astuple = msgspec.structs.astuple
_N_EVENT_FIELDS = len(Event.__struct_fields__)
_FAMILY_CODE = {family: i for i, family in enumerate(FAMILIES)}
_NO_FAMILY = -1
_FAILED = object()  # an item that is valid JSON but not of the expected shape


def too_deep(path: Path, where: str) -> TraceError:
    """The error for JSON nested past msgspec's recursion guard (the interpreter's limit)."""
    return TraceError(
        path,
        f"its JSON is nested too deeply{where}: arrays or objects more than about "
        f"{sys.getrecursionlimit()} levels deep (Kineto traces nest fewer than ten)",
        "This is not a profiler trace, or it was corrupted; re-export it",
    )


def _lenient(kind: Any) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(kind, float_hook=float)


def smallest_int(values: np.ndarray) -> np.ndarray:
    """The same integers in the narrowest dtype that holds them (sparse columns are -1)."""
    if values.size == 0:
        return values.astype(np.int8)
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values


@dataclass
class EventDecoder:
    """Accumulates column chunks batch by batch; `table()` assembles the final frame."""

    path: Path
    bad: BadValues = field(default_factory=BadValues)
    ids: IdInterner = field(default_factory=IdInterner)
    text: dict[str, Interner] = field(default_factory=dict)
    chunks: dict[str, list[np.ndarray]] = field(default_factory=dict)
    repaired_batches: int = 0
    not_objects: int = 0  # traceEvents entries that are not JSON objects
    _family_of_cat: dict[int, int] = field(default_factory=dict)
    _decoder: msgspec.json.Decoder = field(
        default_factory=lambda: msgspec.json.Decoder(list[Event])
    )
    _event_item: msgspec.json.Decoder = field(default_factory=lambda: _lenient(Event))
    _arg_decoders: dict[str, msgspec.json.Decoder] = field(
        default_factory=lambda: {
            f: msgspec.json.Decoder(list[FAMILY_ARGS[f] | None]) for f in FAMILIES
        }
    )
    _arg_items: dict[str, msgspec.json.Decoder] = field(
        default_factory=lambda: {f: _lenient(FAMILY_ARGS[f] | None) for f in FAMILIES}
    )

    def add_batch(self, raws: list[msgspec.Raw], start: int = 0) -> None:
        """Decode one batch; `start` is its first event's index in `traceEvents`."""
        events, failed = self._decode(self._decoder, self._event_item, raws, start)
        if failed:
            self.not_objects += len(failed)
            empty = Event()
            events = [empty if e is _FAILED else e for e in events]
        # Transpose structs into per-field tuples in C: no Python loop per event and field.
        fields = list(zip(*map(_astuple, events), strict=True)) or [()] * _N_EVENT_FIELDS
        del events
        ph, cat, name, pid, tid, ts, dur, flow_id, args = fields
        ph_codes = self._put_text("ph", ph)
        cat_codes = self._put_text("cat", cat)
        self._put_text("name", name)
        self._put("pid", self.ids.column(pid))
        self._put("tid", self.ids.column(tid))
        self._put("ts", float_column(ts, "ts", self.bad))
        self._put("dur", float_column(dur, "dur", self.bad))
        self._put("flow_id", smallest_int(int_column(flow_id, "id", self.bad)))
        self._put_args(args, self._families(ph_codes, cat_codes), start)

    def _families(self, ph_codes: np.ndarray, cat_codes: np.ndarray) -> np.ndarray:
        """Arg family code per event: by category, and "meta" for ph == "M"."""
        known = self._family_of_cat
        for code, text in enumerate(self.text["cat"].table):
            if code not in known:
                family = FAMILY_OF_CATEGORY.get(normalise_category(text))
                known[code] = _FAMILY_CODE[family] if family else _NO_FAMILY
        lookup = np.array([known[c] for c in range(len(known))] + [_NO_FAMILY], dtype=np.int8)
        family = lookup[cat_codes]
        meta_code = self.text["ph"].table.get("M")
        if meta_code is not None:
            family[ph_codes == meta_code] = _FAMILY_CODE["meta"]
        return family

    def _put_args(self, args: Sequence[msgspec.Raw], family: np.ndarray, start: int) -> None:
        n = len(args)
        columns: dict[str, np.ndarray] = {}
        for spec in ARG_SPECS:
            if spec.kind == "float":
                columns[spec.column] = np.full(n, np.nan)
            else:
                dtype = np.int64 if spec.kind == "int" else np.int32
                columns[spec.column] = np.full(n, MISSING, dtype=dtype)
                if spec.kind in ("str", "json"):  # categorical even when never present
                    self.text.setdefault(spec.column, Interner())
        for fam in FAMILIES:
            rows = np.flatnonzero(family == _FAMILY_CODE[fam])
            if len(rows):
                raws = [args[i] or b"null" for i in rows]
                self._fill_family(fam, raws, rows, columns, start)
        for spec in ARG_SPECS:
            values = columns[spec.column]
            self._put(spec.column, smallest_int(values) if values.dtype.kind == "i" else values)

    def _fill_family(
        self,
        fam: str,
        raws: list[Any],
        rows: np.ndarray,
        columns: dict[str, np.ndarray],
        start: int,
    ) -> None:
        decoded, failed = self._decode(
            self._arg_decoders[fam], self._arg_items[fam], raws, start, rows
        )
        self.bad.add("args", len(failed))  # a list or text where an object belongs: absent
        empty = FAMILY_ARGS[fam]()
        if failed or None in decoded:  # an explicit "args": null, or an unusable one
            decoded = [empty if a is None or a is _FAILED else a for a in decoded]
        specs = family_specs(fam)
        values = list(zip(*map(_astuple, decoded), strict=True)) or [()] * len(specs)
        for spec, column in zip(specs, values, strict=True):
            target = columns[spec.column]
            if spec.kind == "int":
                target[rows] = int_column(column, spec.key, self.bad)
            elif spec.kind == "float":
                target[rows] = float_column(column, spec.key, self.bad)
            elif spec.kind == "json":
                present = np.fromiter(map(len, column), np.int64, len(column))
                target[rows] = self._sparse_codes(spec, column, present)
            else:
                present = np.fromiter(map(is_not, column, repeat(None)), bool, len(column))
                target[rows] = self._sparse_codes(spec, column, present)

    def _decode(
        self,
        decoder: msgspec.json.Decoder,
        item: msgspec.json.Decoder,
        raws: Sequence[Any],
        start: int,
        rows: np.ndarray | None = None,
    ) -> tuple[list[Any], list[int]]:
        """Decoded items and the positions of those that are not of the expected shape."""
        buf = b"[" + b",".join(raws) + b"]"
        try:
            return decoder.decode(buf), []
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError as exc:
            if "UTF-8" in str(exc):
                # Kernel names cut mid-character by some profilers: keep the event, mark the
                # bytes. The one-by-one pass below repairs the same way.
                try:
                    decoded = decoder.decode(_repaired(buf))
                    self.repaired_batches += 1
                    return decoded, []
                except (msgspec.DecodeError, RecursionError):  # incl. ValidationError
                    pass
        except RecursionError:
            pass
        return self._each(item, raws, start, rows)

    def _each(
        self, item: msgspec.json.Decoder, raws: Sequence[Any], start: int, rows: Any
    ) -> tuple[list[Any], list[int]]:
        """The slow path: one item at a time, so a bad one is skipped or named exactly."""
        out: list[Any] = []
        failed: list[int] = []
        repaired = False
        for i, raw in enumerate(raws):
            index = start + (i if rows is None else int(rows[i]))
            try:
                value, fixed = _decode_one(item, raw)
                out.append(value)
                repaired |= fixed
            except msgspec.ValidationError:
                out.append(_FAILED)
                failed.append(i)
            except msgspec.DecodeError as exc:
                problem, hint = explain(bytes(raw), exc, " of the event")
                raise TraceError(
                    self.path, f"event {index} of 'traceEvents' (from 0): {problem}", hint
                ) from None
            except RecursionError:
                raise too_deep(self.path, f" in event {index} of 'traceEvents' (from 0)") from None
        self.repaired_batches += repaired
        return out, failed

    def _put(self, column: str, values: np.ndarray) -> None:
        self.chunks.setdefault(column, []).append(values)

    def _put_text(self, column: str, values: Sequence[Any]) -> np.ndarray:
        codes = self.text.setdefault(column, Interner()).codes(values, self.bad, column)
        self._put(column, smallest_int(codes))
        return codes

    def _sparse_codes(
        self, spec: ArgSpec, values: Sequence[Any], present: np.ndarray
    ) -> np.ndarray:
        """Intern only the events that carry the value; the rest get the missing code."""
        interner = self.text.setdefault(spec.column, Interner())
        codes = np.full(len(values), MISSING, dtype=np.int32)
        where = np.flatnonzero(present)
        if len(where):
            subset = [values[i] for i in where]
            if isinstance(subset[0], msgspec.Raw):
                subset = [bytes(v) for v in subset]
            codes[where] = interner.codes(subset, self.bad, spec.key)
        return codes

    def table(self) -> pd.DataFrame:
        columns: dict[str, Any] = {}
        for column in list(self.chunks):
            parts = self.chunks.pop(column)  # free each column's chunks as it is assembled
            values = np.concatenate(parts) if parts else np.empty(0)
            del parts
            if column == "cat":
                columns[column] = _normalise_categories(self.text[column].categorical(values))
            elif column == "name":  # bounded where names enter the engine (long_names.py)
                columns[column] = cap_names(self.text[column].categorical(values))
            elif column in self.text:
                columns[column] = self.text[column].categorical(values)
            else:
                columns[column] = values
        if not columns:
            return _empty_table()
        frame = pd.DataFrame(columns, copy=False)  # no consolidation copy of the columns
        frame.index.name = "uid"
        return frame


def _decode_one(decoder: msgspec.json.Decoder, raw: Any) -> tuple[Any, bool]:
    """The decoded item, and whether its text needed its invalid UTF-8 repaired."""
    try:
        return decoder.decode(raw), False
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as exc:
        if "UTF-8" not in str(exc):
            raise
    return decoder.decode(_repaired(raw)), True


def _repaired(buf: Any) -> bytes:
    return bytes(buf).decode("utf-8", "replace").encode("utf-8")


def _normalise_categories(cat: pd.Categorical) -> pd.Categorical:
    """Merge old and new spellings ("Kernel", "kernel") into the modern category names."""
    names = [normalise_category(str(c)) for c in cat.categories]
    unique = list(dict.fromkeys(names))
    position = {n: i for i, n in enumerate(unique)}
    remap = np.array([position[n] for n in names] + [-1], dtype=np.int32)
    return pd.Categorical.from_codes(remap[cat.codes], categories=pd.Index(unique, dtype=object))


def _empty_table() -> pd.DataFrame:
    decoder = EventDecoder(Path("-"))
    decoder.add_batch([])
    return decoder.table()
