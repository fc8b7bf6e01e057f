"""What a few perf models need that their op's own args do not record, looked up in the trace.

Only rows of the op names that ask for a fact get one; every other row keeps an empty value,
so its signature, and the once-per-signature evaluation, stay exactly as before.

* `annotation`: the enclosing iteration annotation of inference attention ops
  (docs/report-tables.md#op-context): the first `user_annotation`, in ts order, with
  `ann.ts <= e.ts` and `e.t_end < ann.t_end`, else ''.
* `kernels`: the names of the kernels the instance owns, newline-joined, for ops whose work
  depends on what they launched (vLLM attention that only zero-fills during graph capture).
* `input_dims`/`input_type` of `aten::index`: traces write its optional-tensor list of
  indices as `[]`. ATen reshapes every index tensor inside the op (`reshape_indexer`), and
  those direct `aten::reshape`/`aten::view` children record the index shapes and dtype; they
  are filled into the model's copy of the args (the report's `Input Dims` stay as recorded).
  Only the layout whose indices cover the leading dims is recovered: the reshape target must
  be the index shape followed by ones, and the `as_strided` restride of `self` must have the
  index dims first (stride 0); anything else keeps the model's "not recorded" reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from ..perf.elementwise import INDEX_DTYPES
from ..perf.inference_attention import NEEDS_ANNOTATION, NEEDS_KERNELS
from ..perf.operands import parse_ints
from ..trace.model import TraceModel

INDEX_OPS = frozenset({"aten::index"})
INDEX_RESHAPES = frozenset({"aten::reshape", "aten::view"})


def enclosing_annotations(events: pd.DataFrame, uids: np.ndarray) -> np.ndarray:
    """Per uid, the name of the first enclosing `user_annotation` by ts, else ''.

    Vectorised: among annotations sorted by ts, those starting at or before the event are a
    prefix; the first of them ending after the event is the first position where the running
    maximum of their end times exceeds the event's end.
    """
    out = np.full(len(uids), "", dtype=object)
    is_ann = (events["cat"] == "user_annotation").to_numpy()
    if not is_ann.any() or not len(uids):
        return out
    ann = np.flatnonzero(is_ann)
    ts = events["ts"].to_numpy(dtype=np.float64)
    end = ts + events["dur"].to_numpy(dtype=np.float64)
    ann = ann[np.argsort(ts[ann], kind="stable")]
    running_end = np.maximum.accumulate(end[ann])
    started = np.searchsorted(ts[ann], ts[uids], side="right")
    first = np.searchsorted(running_end, end[uids], side="right")
    found = first < started
    names = events["name"].to_numpy()
    out[found] = names[ann[first[found]]].astype(object)
    return out


def _decoded(text: Any) -> list[Any]:
    if not isinstance(text, str) or not text:
        return []
    value = msgspec.json.decode(text)
    return value if isinstance(value, list) else []


def _first(values: Sequence[Any]) -> Any:
    return values[0] if values else None


def recovered_indices(
    self_dims: Sequence[Any], restride: Sequence[int] | None, reshapes: Sequence[tuple[Any, Any]]
) -> list[list[int]] | None:
    """Index shapes from the op's children when they cover the leading dims, else None.

    `reshapes`: (input shape, target shape) of each index reshape; `restride`: the strides
    `self` was restrided to (the `as_strided` child), or None when there was none.
    """
    if not reshapes or not isinstance(self_dims, list) or len(reshapes) > len(self_dims):
        return None
    shapes = [s for s, _ in reshapes]
    if not all(isinstance(s, list) and all(isinstance(d, int) for d in s) for s in shapes):
        return None
    rank_index = max(len(s) for s in shapes)
    trailing = len(self_dims) - len(reshapes)
    for shape, target in reshapes:
        if target is None or list(target) != [*shape, *([1] * trailing)]:
            return None
    if restride is not None and any(s != 0 for s in restride[:rank_index]):
        return None
    return shapes


def _index_args(model: TraceModel, uids: np.ndarray) -> dict[int, tuple[str, str]]:
    """(input_dims, input_type) JSON with the recovered indices, per aten::index uid."""
    ev = model.events
    parent = model.tree.parent
    children = np.flatnonzero(np.isin(parent, uids) & (ev["cat"] == "cpu_op").to_numpy())
    children = children[np.argsort(ev["ts"].to_numpy()[children], kind="stable")]
    names = model.names
    dims, types, concrete = ev["input_dims"], ev["input_type"], ev["concrete_inputs"]
    reshapes: dict[int, list[tuple[Any, Any]]] = {}
    index_dtype: dict[int, str] = {}
    restrides: dict[int, Sequence[int] | None] = {}
    for child in children.tolist():
        owner = int(parent[child])
        values = _decoded(concrete.iat[child])
        if names[child] == "aten::as_strided" and owner not in restrides:
            restrides[owner] = parse_ints(str(values[2])) if len(values) > 2 else None
            continue
        dtype = _first(_decoded(types.iat[child]))
        if names[child] in INDEX_RESHAPES and dtype in INDEX_DTYPES:
            target = parse_ints(str(values[1])) if len(values) > 1 else None
            reshapes.setdefault(owner, []).append((_first(_decoded(dims.iat[child])), target))
            index_dtype.setdefault(owner, dtype)
    out: dict[int, tuple[str, str]] = {}
    for uid, found in reshapes.items():
        own_dims, own_types = _decoded(dims.iat[uid]), _decoded(types.iat[uid])
        if len(own_dims) < 2 or own_dims[1] or len(own_types) < 2:
            continue  # the indices are recorded, or the layout is unknown
        shapes = recovered_indices(own_dims[0], restrides.get(uid), found)
        if shapes is None:
            continue
        new_dims = [own_dims[0], shapes, *own_dims[2:]]
        new_types = [own_types[0], index_dtype[uid], *own_types[2:]]
        out[uid] = (_json(new_dims), _json(new_types))
    return out


def _json(value: list[Any]) -> str:
    return msgspec.json.encode(value).decode()


def _kernel_names(model: TraceModel, kernels: pd.DataFrame, rows: np.ndarray) -> dict[int, str]:
    """Newline-joined kernel names (ts order) of the given op rows."""
    own = kernels[np.isin(kernels["op"].to_numpy(), rows)]
    own = own.assign(ts=model.events["ts"].to_numpy()[own["gpu"].to_numpy()])
    own = own.sort_values(["op", "ts"], kind="stable")
    names = model.names
    grouped = own.groupby("op", sort=False)["gpu"]
    return {int(op): "\n".join(str(names[g]) for g in gpus) for op, gpus in grouped}


def with_op_context(
    model: TraceModel, evaluated: pd.DataFrame, uids: np.ndarray, kernels: pd.DataFrame
) -> pd.DataFrame:
    """`evaluated` (one row per op instance: name, the arg columns, ...) with `annotation`
    and `kernels` columns added and aten::index indices filled in where they can be.

    `uids` are the events whose args each row reads; `kernels` pairs op rows with GPU uids.
    """
    names = evaluated["name"].to_numpy()
    annotation = np.full(len(evaluated), "", dtype=object)
    asks = np.flatnonzero(np.isin(names, list(NEEDS_ANNOTATION)))
    annotation[asks] = enclosing_annotations(model.events, uids[asks])
    launched = np.full(len(evaluated), "", dtype=object)
    asks = np.flatnonzero(np.isin(names, list(NEEDS_KERNELS)))
    for row, text in _kernel_names(model, kernels, asks).items():
        launched[row] = text
    out = evaluated.assign(annotation=annotation, kernels=launched)
    rows = np.flatnonzero(np.isin(names, list(INDEX_OPS)))
    if len(rows):
        recovered = _index_args(model, np.unique(uids[rows]))
        for row in rows.tolist():
            found = recovered.get(int(uids[row]))
            if found is not None:
                out.iat[row, out.columns.get_loc("input_dims")] = found[0]
                out.iat[row, out.columns.get_loc("input_type")] = found[1]
    return out
