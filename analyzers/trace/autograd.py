"""Forward <-> backward links through the autograd `Sequence number` (docs/trace.md#autograd)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import MISSING, name_matches

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "


@dataclass(frozen=True, slots=True)
class AutogradLinks:
    """`fwd[bwd_uid]` is the forward op of a backward node; `pairs` lists (fwd, bwd) uids."""

    fwd: np.ndarray
    pairs: pd.DataFrame  # columns fwd, bwd


def link_autograd(events: pd.DataFrame) -> AutogradLinks:
    """Pair each backward node with the forward op of the same sequence number.

    The forward op is the one, among events sharing the backward node's sequence number but
    running on another thread, with the latest start (the innermost forward op).
    """
    fwd = np.full(len(events), MISSING, dtype=np.int64)
    seq = events.loc[(events["seq"] != MISSING).to_numpy(), ["name", "pid", "tid", "ts", "seq"]]
    is_bwd = name_matches(seq["name"], lambda n: n.startswith(BACKWARD_PREFIX))
    bwd = seq[is_bwd].reset_index(names="bwd")
    candidates = seq.reset_index(names="fwd")
    joined = bwd[["bwd", "seq", "pid", "tid"]].merge(
        candidates[["fwd", "seq", "pid", "tid", "ts"]], on="seq", suffixes=("", "_fwd")
    )
    other_thread = (joined["pid"] != joined["pid_fwd"]) | (joined["tid"] != joined["tid_fwd"])
    joined = joined[other_thread.to_numpy()]
    if len(joined):
        best = joined.sort_values(["bwd", "ts", "fwd"]).drop_duplicates("bwd", keep="last")
        pairs = best[["fwd", "bwd"]].reset_index(drop=True)
    else:
        pairs = pd.DataFrame({"fwd": np.empty(0, np.int64), "bwd": np.empty(0, np.int64)})
    fwd[pairs["bwd"].to_numpy()] = pairs["fwd"].to_numpy()
    return AutogradLinks(fwd=fwd, pairs=pairs)
