"""Reading an op's recorded arguments: `Concrete Inputs` text, element sizes and shapes.

The small parsers of `Concrete Inputs` text ('[-1]', 'True', '[2., 2.]') and the byte and
shape arithmetic that the elementwise, reduce, norm, fused and inference models share. No
`eval`: the strings are split and converted by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from .base import Shape, Unsupported
from .dtypes import bytes_per_element

T = TypeVar("T")


def parse_flag(text: str) -> bool | None:
    """'True'/'False' (also '1'/'0') as a bool; None when absent ('' or 'None')."""
    value = text.strip().lower()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    return None


def _parsed(text: str, convert: Callable[[str], T], what: str) -> tuple[T, ...] | None:
    """A concrete input ('[-1, -2]', '1', '[]', '[2., 2.]') item by item; None when absent."""
    value = text.strip()
    if value in ("", "None"):
        return None
    try:
        return tuple(convert(part) for part in re.split(r"[\s,\[\]()]+", value) if part)
    except ValueError as error:
        raise Unsupported(f"expected {what}, got '{text}'") from error


def _strict_flag(text: str) -> bool:
    flag = parse_flag(text)
    if flag is None:
        raise ValueError(text)
    return flag


def parse_ints(text: str) -> tuple[int, ...] | None:
    return _parsed(text, int, "integers")


def parse_floats(text: str) -> tuple[float, ...] | None:
    return _parsed(text, float, "numbers")


def parse_flags(text: str) -> tuple[bool, ...] | None:
    return _parsed(text, _strict_flag, "booleans")


def size_of(dtype: str | None) -> float | None:
    """Bytes per element of a dtype string, None when unknown or absent."""
    return bytes_per_element(dtype) if dtype else None


def total_bytes(*terms: tuple[float, float | None]) -> float | None:
    """Σ elements × bytes-per-element; None as soon as one element size is unknown."""
    if any(size is None for _, size in terms):
        return None
    return float(sum(count * size for count, size in terms if size is not None))


def broadcast(*shapes: Shape) -> Shape:
    """NumPy/PyTorch broadcast of shapes; Unsupported when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        sizes = {s[axis - rank + len(s)] for s in shapes if axis - rank + len(s) >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise Unsupported(f"shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def normalize_dim(dim: int, rank: int) -> int:
    """A possibly negative dim index as 0..rank-1; Unsupported when out of range."""
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise Unsupported(f"dim {dim} out of range for rank {rank}")
    return dim % max(rank, 1)
