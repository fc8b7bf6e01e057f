"""The row every pseudo-op stage inserts: one synthetic `cpu_op` above one kernel launch."""

from __future__ import annotations

import json
from dataclasses import dataclass

import msgspec
import pandas as pd

PSEUDO_PREFIX = "pseudo_op::"


def canonical_json(value: object) -> str:
    """The loader's compact JSON text (columns._as_text), so equal args share one string."""
    return json.dumps(value, separators=(",", ":"))


def json_list(text: object) -> list | None:
    """A JSON list cell (Input Dims, Concrete Inputs, a shape), or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, list) else None


@dataclass(frozen=True, slots=True)
class PseudoRow:
    """A pseudo op: the runtime launch it goes above, its name and its recorded-value args."""

    launch: int
    name: str
    dims: list
    types: list[str]
    concrete: list[str]

    def columns(self, events: pd.DataFrame) -> dict:
        """The new event's columns; thread and times are the launch's."""
        u = self.launch
        return {
            "ph": "X",
            "cat": "cpu_op",
            "name": self.name,
            "pid": int(events["pid"].iat[u]),
            "tid": int(events["tid"].iat[u]),
            "ts": float(events["ts"].iat[u]),
            "dur": float(events["dur"].iat[u]),
            "input_dims": canonical_json(self.dims),
            "input_type": canonical_json(self.types),
            "concrete_inputs": canonical_json(self.concrete),
        }
