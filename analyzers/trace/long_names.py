"""Event names longer than any real one, cut where the engine takes them in.

An operator, kernel or frame name of a megabyte (a generated or hostile trace) would otherwise
reach every table, CSV cell, report and tool result, and break readers with a cell limit (the
csv module's is 128 KiB). The longest names in real traces are templated kernels of about
5,200 characters, so names up to MAX_NAME_CHARS are kept whole; a longer one keeps its start,
then an ellipsis, its length and a short digest of the whole name, so two long names that
share their start stay two rows. Design: docs/trace.md, docs/security.md.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

MAX_NAME_CHARS = 8192  # characters an event name keeps; the mark below fits inside this


def capped(name: str) -> str:
    """`name`, or its first characters, "…", its length and a digest: MAX_NAME_CHARS at most."""
    if len(name) <= MAX_NAME_CHARS:
        return name
    digest = hashlib.blake2b(name.encode("utf-8", "replace"), digest_size=4).hexdigest()
    mark = f"… [{len(name):,} characters, #{digest}]"
    return name[: MAX_NAME_CHARS - len(mark)] + mark


def cap_names(names: pd.Categorical) -> pd.Categorical:
    """A categorical of names with every category longer than MAX_NAME_CHARS capped; the same
    object when none is (the common case costs one pass over the unique names)."""
    categories = names.categories
    lengths = np.fromiter((len(str(c)) for c in categories), dtype=np.int64, count=len(categories))
    if not (lengths > MAX_NAME_CHARS).any():
        return names
    new = [capped(str(c)) for c in categories]
    unique = list(dict.fromkeys(new))  # capped names that came out equal: one category
    position = {n: i for i, n in enumerate(unique)}
    remap = np.array([position[n] for n in new] + [-1], dtype=np.int32)
    return pd.Categorical.from_codes(remap[names.codes], categories=pd.Index(unique, dtype=object))
