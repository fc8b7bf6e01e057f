"""Op-name normalisation applied when the model is built (docs/trace.md#pseudo-ops).

SGLang's kernel-shape profiler wraps each profiled call in a cpu_op named
`sglang_profiler::<module>_<function>_<line>`: the trailing digits are the Python source line
of the call site, not part of the op's identity. TraceLens drops them (its pseudo-op pass);
we do the same for every trace, so `sglang_profiler::attention_paged_attention_ragged_100`
is `sglang_profiler::attention_paged_attention_ragged` everywhere in the report (rows,
categories, perf models). Only `cpu_op` names change: python frames, which repeat the name
in `<built-in method ..._100 of ...>`, keep theirs. Names whose suffix is not all digits,
or that would become empty, are left as they are.
"""

from __future__ import annotations

import re

import pandas as pd

SGLANG_PROFILER = re.compile(r"^(sglang_profiler::.+?)_\d+$")


def normalised_name(name: str) -> str:
    """`sglang_profiler::<name>_<digits>` -> `sglang_profiler::<name>`; others unchanged."""
    match = SGLANG_PROFILER.match(name)
    return match.group(1) if match else name


def normalise_op_names(events: pd.DataFrame) -> pd.DataFrame | None:
    """`events` with the cpu_op names normalised, or None when no name changes."""
    names = events["name"]
    categories = names.cat.categories if hasattr(names, "cat") else pd.Index(names.unique())
    renamed = {c: normalised_name(c) for c in categories if isinstance(c, str)}
    renamed = {old: new for old, new in renamed.items() if old != new}
    if not renamed:
        return None
    is_cpu_op = (events["cat"] == "cpu_op").to_numpy()
    hit = is_cpu_op & names.isin(list(renamed)).to_numpy()
    if not hit.any():
        return None
    values = names.astype(object).to_numpy(copy=True)
    values[hit] = [renamed[v] for v in values[hit]]
    new = pd.Series(values, index=events.index)
    return events.assign(name=new.astype("category") if hasattr(names, "cat") else new)
