"""Turn per-batch Python value lists into typed numpy columns, tolerating odd values.

Producers write what they like: ids as strings, integers beyond int64, floats where ints are
expected. The fast path is one numpy conversion; only when it fails does a per-value pass
sanitise the batch, and every value it had to drop is counted so trace health can say so.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pandas as pd

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MISSING = -1


@dataclass(slots=True)
class BadValues:
    """Counts of values that could not be stored as their column's type, per column."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, column: str, n: int) -> None:
        if n:
            self.counts[column] = self.counts.get(column, 0) + n


def _to_int(v: Any) -> int | None:
    """An exact int64 value, or None (out of range, fractional, not a number)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v if INT64_MIN <= v <= INT64_MAX else None
    if isinstance(v, float):
        return _to_int(int(v)) if v.is_integer() else None
    if isinstance(v, str):
        try:
            return _to_int(int(v, 0))
        except ValueError:
            return None
    return None


def _exact_int64(values: Sequence[Any]) -> np.ndarray | None:
    """One C-level conversion when every value is an in-range whole number, else None.

    numpy would silently truncate 1.5 to 1 or wrap 2**63 around, so the array's inferred
    dtype is checked before it is trusted.
    """
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError, OverflowError):
        return None
    if arr.dtype.kind == "i":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "u":
        return arr.astype(np.int64) if (arr.size == 0 or arr.max() <= INT64_MAX) else None
    if arr.dtype.kind == "f":
        whole = np.isfinite(arr) & (arr == np.trunc(arr)) & (np.abs(arr) < 2.0**63)
        return arr.astype(np.int64) if whole.all() else None
    return None


def int_column(values: Sequence[Any], column: str, bad: BadValues) -> np.ndarray:
    """int64 column; None becomes MISSING (-1), unusable values too (and are counted)."""
    fast = _exact_int64(values)
    if fast is not None:
        return fast
    # explicit nulls ("Python parent id": null) are common and harmless
    fast = _exact_int64([MISSING if v is None else v for v in values])
    if fast is not None:
        return fast
    out = np.empty(len(values), dtype=np.int64)
    n_bad = 0
    for i, v in enumerate(values):
        iv = None if v is None else _to_int(v)
        if iv is None and v is not None:
            n_bad += 1
        out[i] = MISSING if iv is None else iv
    bad.add(column, n_bad)
    return out


def float_column(values: Sequence[Any], column: str, bad: BadValues) -> np.ndarray:
    """float64 column; None and unusable values become NaN (the latter counted)."""
    try:
        return np.array(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        out = np.full(len(values), np.nan)
        n_bad = 0
        for i, v in enumerate(values):
            if v is None:
                continue
            try:
                out[i] = float(v)
            except (TypeError, ValueError, OverflowError):
                n_bad += 1
        bad.add(column, n_bad)
        return out


MAX_ARG_DEPTH = 16  # kept JSON args (shapes, grids, ranks) nest 3 deep; deeper is junk
_JSON_ANY = msgspec.json.Decoder(float_hook=float)  # 1e400 -> inf, re-encoded as null
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def nested_deeper_than(data: bytes, limit: int) -> bool:
    """Whether JSON text nests arrays/objects more than `limit` deep (brackets in strings
    do not count). Counting brackets first makes the common, shallow case one C call."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for byte in _STRING.sub(b'""', data):
        if byte in b"[{":
            depth += 1
            if depth > limit:
                return True
        elif byte in b"]}":
            depth -= 1
    return False


def _json_text(value: bytes | bytearray | memoryview) -> str | None:
    """Canonical compact text of a JSON slice, or None when it cannot be used.

    Too deep a value is refused before it is parsed, so no later stage that re-parses the
    text (shape parsers, perf models) can hit a recursion limit on it.
    """
    data = bytes(value)
    if nested_deeper_than(data, MAX_ARG_DEPTH):
        return None
    for candidate in (data, data.decode("utf-8", "replace").encode()):  # invalid UTF-8: repair
        try:
            return msgspec.json.encode(_JSON_ANY.decode(candidate)).decode()
        except msgspec.DecodeError:
            continue
    return None


def _as_text(value: Any) -> str | None:
    """Text of a value in a text column; None for an array or object (unusable as text)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):  # JSON slices kept from the trace
        return _json_text(value)
    if isinstance(value, list | dict):
        return None
    return json.dumps(value)


class Interner:
    """Global string table for one categorical column, fed batch by batch.

    Each batch is factorised in C (pandas), and only its unique values touch Python, so the
    cost per event is a hash lookup, not an object kept alive.
    """

    __slots__ = ("table",)

    def __init__(self) -> None:
        self.table: dict[str, int] = {}

    def codes(
        self, values: Sequence[Any], bad: BadValues | None = None, key: str = ""
    ) -> np.ndarray:
        """Codes of `values`; unusable ones (arrays where text belongs, too-deep JSON) get
        the missing code and are counted in `bad` under `key`."""
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        try:
            local, uniques = pd.factorize(arr, use_na_sentinel=True)
        except TypeError:  # an unhashable value (a list or object where text was expected)
            arr[:] = [None if isinstance(v, list | dict) else v for v in values]
            local, uniques = pd.factorize(arr, use_na_sentinel=True)
            if bad is not None:
                bad.add(key, sum(isinstance(v, list | dict) for v in values))
        table = self.table
        texts = [_as_text(u) for u in uniques]
        remap = np.fromiter(
            (MISSING if t is None else table.setdefault(t, len(table)) for t in texts),
            dtype=np.int32,
            count=len(texts),
        )
        codes = np.append(remap, np.int32(MISSING))[local]
        if bad is not None and None in texts:
            unusable = [i for i, t in enumerate(texts) if t is None]
            bad.add(key, int(np.isin(local, unusable).sum()))
        return codes

    def categorical(self, codes: np.ndarray) -> pd.Categorical:
        categories = pd.Index(list(self.table), dtype=object)
        return pd.Categorical.from_codes(codes, categories=categories)


# Text pids/tids ("Spans", "Traces") and missing ones get codes far below any real id, so a
# genuine negative pid (CUPTI writes -1 for its overhead events) never collides with them.
TEXT_ID_BASE = -(2**62)


class IdInterner:
    """pid/tid column: integers stay as they are; text ids get codes below TEXT_ID_BASE."""

    __slots__ = ("labels",)

    def __init__(self) -> None:
        self.labels: dict[str, int] = {}

    def column(self, values: Sequence[Any]) -> np.ndarray:
        fast = _exact_int64(values)
        if fast is not None:
            return fast
        code = self._code
        return np.fromiter(
            (v if type(v) is int and INT64_MIN <= v <= INT64_MAX else code(v) for v in values),
            dtype=np.int64,
            count=len(values),
        )

    def _code(self, v: Any) -> int:
        iv = None if v is None else _to_int(v)
        if iv is not None:
            return iv
        text = "<missing>" if v is None else (_as_text(v) or "<malformed>")
        return self.labels.setdefault(text, TEXT_ID_BASE - len(self.labels))


def name_matches(names: pd.Series, predicate: Callable[[str], bool]) -> np.ndarray:
    """Boolean per row of a categorical text column, evaluating `predicate` per category."""
    values = names.array
    if not isinstance(values, pd.Categorical):
        values = pd.Categorical(values)
    hits = np.array([predicate(str(c)) for c in values.categories] + [False], dtype=bool)
    return hits[values.codes]


def concat_rows(events: pd.DataFrame, blocks: list[pd.DataFrame]) -> pd.DataFrame:
    """`events` with `blocks` appended as new rows (uids continue), column by column.

    Categorical columns merge their categories (kept as object text, as the loader writes
    them); a column a block lacks is missing there. Used by the stages that add rows the file
    does not hold (graft.py, pseudo.py).
    """
    columns = {}
    for name, column in events.items():
        parts = [column] + [b.get(name) for b in blocks]
        sizes = [len(column)] + [len(b) for b in blocks]
        if isinstance(column.dtype, pd.CategoricalDtype):
            columns[name] = _union_text(parts, sizes)
        else:
            columns[name] = np.concatenate(
                [
                    p.to_numpy() if p is not None else _missing_values(column, n)
                    for p, n in zip(parts, sizes, strict=True)
                ]
            )
    total = sum(sizes)
    return pd.DataFrame(columns, index=pd.RangeIndex(total, name=events.index.name))


def _missing_values(column: pd.Series, n: int) -> np.ndarray:
    if column.dtype.kind == "f":
        return np.full(n, np.nan)
    return np.full(n, MISSING, dtype=column.dtype)


def _union_text(parts: list[pd.Series | None], sizes: list[int]) -> pd.Categorical:
    """One categorical over every part (categorical, text, or None for all-missing)."""
    table: dict[object, int] = {}
    codes = []
    for part, n in zip(parts, sizes, strict=True):
        if part is None:
            codes.append(np.full(n, MISSING, dtype=np.int64))
            continue
        values = part.array if isinstance(part.dtype, pd.CategoricalDtype) else None
        if values is None:
            local, uniques = pd.factorize(part.to_numpy(dtype=object), use_na_sentinel=True)
            values = pd.Categorical.from_codes(local, categories=pd.Index(uniques, dtype=object))
        remap = np.fromiter(
            (table.setdefault(c, len(table)) for c in values.categories.to_numpy(dtype=object)),
            dtype=np.int64,
            count=len(values.categories),
        )
        codes.append(np.append(remap, MISSING)[values.codes])
    categories = pd.Index(list(table), dtype=object)
    return pd.Categorical.from_codes(np.concatenate(codes), categories=categories)
