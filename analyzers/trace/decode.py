"""Decode batches of raw Chrome-trace events into typed numpy column chunks.

Core fields (ph, cat, name, pid, tid, ts, dur, id) are decoded for every event; `args` are
decoded per family (operator, GPU, runtime, Python frame, metadata) with a struct holding that
family's fields only, and become columns that are missing elsewhere. Text becomes codes into
per-column string tables; integers take the narrowest dtype that holds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import is_not
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from rooflens.analyzers.trace.columns import (
    MISSING,
    BadValues,
    IdInterner,
    Interner,
    float_column,
    int_column,
)
from rooflens.analyzers.trace.errors import TraceError
from rooflens.analyzers.trace.schema import (
    ARG_SPECS,
    FAMILIES,
    FAMILY_ARGS,
    FAMILY_OF_CATEGORY,
    Event,
    family_specs,
    normalise_category,
)

_astuple = msgspec.structs.astuple
_N_EVENT_FIELDS = len(Event.__struct_fields__)
_FAMILY_CODE = {family: i for i, family in enumerate(FAMILIES)}
_NO_FAMILY = -1


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
    _family_of_cat: dict[int, int] = field(default_factory=dict)
    _decoder: msgspec.json.Decoder = field(
        default_factory=lambda: msgspec.json.Decoder(list[Event])
    )
    _arg_decoders: dict[str, msgspec.json.Decoder] = field(
        default_factory=lambda: {
            f: msgspec.json.Decoder(list[FAMILY_ARGS[f] | None]) for f in FAMILIES
        }
    )

    def add_batch(self, raws: list[msgspec.Raw]) -> None:
        events = self._decode(self._decoder, b"[" + b",".join(raws) + b"]")
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
        self._put_args(args, self._families(ph_codes, cat_codes))

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

    def _put_args(self, args: Sequence[msgspec.Raw], family: np.ndarray) -> None:
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
                self._fill_family(fam, [args[i] or b"null" for i in rows], rows, columns)
        for spec in ARG_SPECS:
            values = columns[spec.column]
            self._put(spec.column, smallest_int(values) if values.dtype.kind == "i" else values)

    def _fill_family(
        self, fam: str, raws: list[Any], rows: np.ndarray, columns: dict[str, np.ndarray]
    ) -> None:
        decoded = self._decode(self._arg_decoders[fam], b"[" + b",".join(raws) + b"]")
        empty = FAMILY_ARGS[fam]()
        if None in decoded:  # an explicit "args": null
            decoded = [empty if a is None else a for a in decoded]
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
                target[rows] = self._sparse_codes(spec.column, column, present)
            else:
                present = np.fromiter(map(is_not, column, repeat(None)), bool, len(column))
                target[rows] = self._sparse_codes(spec.column, column, present)

    def _decode(self, decoder: msgspec.json.Decoder, buf: bytes) -> list[Any]:
        try:
            return decoder.decode(buf)
        except msgspec.ValidationError as exc:
            raise TraceError(
                self.path,
                f"is JSON but not a Chrome trace: an event is malformed ({exc})",
                "Each entry of 'traceEvents' must be an object",
            ) from None
        except msgspec.DecodeError as exc:
            if "UTF-8" not in str(exc):
                raise TraceError(self.path, f"invalid JSON ({exc})") from None
        # Kernel names cut mid-character by some profilers: keep the event, mark the bytes.
        self.repaired_batches += 1
        return decoder.decode(buf.decode("utf-8", "replace").encode("utf-8"))

    def _put(self, column: str, values: np.ndarray) -> None:
        self.chunks.setdefault(column, []).append(values)

    def _put_text(self, column: str, values: Sequence[Any]) -> np.ndarray:
        codes = self.text.setdefault(column, Interner()).codes(values)
        self._put(column, smallest_int(codes))
        return codes

    def _sparse_codes(self, column: str, values: Sequence[Any], present: np.ndarray) -> np.ndarray:
        """Intern only the events that carry the value; the rest get the missing code."""
        interner = self.text.setdefault(column, Interner())
        codes = np.full(len(values), MISSING, dtype=np.int32)
        where = np.flatnonzero(present)
        if len(where):
            subset = [values[i] for i in where]
            if isinstance(subset[0], msgspec.Raw):
                subset = [bytes(v) for v in subset]
            codes[where] = interner.codes(subset)
        return codes

    def table(self) -> pd.DataFrame:
        columns: dict[str, Any] = {}
        for column in list(self.chunks):
            parts = self.chunks.pop(column)  # free each column's chunks as it is assembled
            values = np.concatenate(parts) if parts else np.empty(0)
            del parts
            if column == "cat":
                columns[column] = _normalise_categories(self.text[column].categorical(values))
            elif column in self.text:
                columns[column] = self.text[column].categorical(values)
            else:
                columns[column] = values
        if not columns:
            return _empty_table()
        frame = pd.DataFrame(columns, copy=False)  # no consolidation copy of the columns
        frame.index.name = "uid"
        return frame


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
