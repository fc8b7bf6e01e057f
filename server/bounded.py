"""Results sized for a model's context: lists are cut to what fits a byte budget, and say so.

A tool result travels twice (structured content and its compact text copy), so a tool's
budget is half the server's limit (`AppState.payload_budget`).
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel

T = TypeVar("T")


def size(value: Any) -> int:
    """Bytes of the compact JSON of `value` (a model, or plain data)."""
    if isinstance(value, BaseModel):
        return len(value.model_dump_json().encode("utf-8"))
    return len(json.dumps(value, separators=(",", ":"), default=str).encode("utf-8"))


def fit(base: BaseModel, field: str, items: list[T], budget: int) -> tuple[list[T], bool]:
    """The longest prefix of `items` that, put in `base.<field>`, stays within `budget`
    bytes; and whether any item was left out."""
    room = budget - size(base)
    kept: list[T] = []
    for item in items:
        room -= size(item) + 1
        if room < 0:
            break
        kept.append(item)
    return kept, len(kept) < len(items)
