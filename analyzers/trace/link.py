"""Link host launches (runtime/driver calls) to the GPU work they started (docs/trace.md#linking).

The linking id is `correlation` in modern traces and `External id` in old ones, chosen from
the first launch-like runtime event. An ordinary launch reaches its GPU event through the
`ac2g` flow pair carrying that id; a graph launch owns every GPU event with its id. A trace
with no flow events at all (some exporters drop them) is linked by id alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from .columns import MISSING, name_matches
from .schema import GPU_CATEGORIES, GRAPH_LAUNCH_NAMES, LAUNCH_CATEGORIES

LinkKey = Literal["correlation", "external_id"]


@dataclass(frozen=True, slots=True)
class Links:
    """For every event (by uid), the host launch that started it, or -1."""

    key: LinkKey
    launch: np.ndarray
    by_flow: bool
    colliding_ids: int  # launch ids seen in more than one host process (merged ranks)


def choose_key(events: pd.DataFrame) -> LinkKey:
    """`correlation` unless the first launch-like runtime event lacks it (pre-2022 Kineto)."""
    is_launch = events["cat"].isin(LAUNCH_CATEGORIES).to_numpy() & name_matches(
        events["name"], lambda n: "launch" in n.lower()
    )
    first = np.flatnonzero(is_launch)[:1]
    if len(first) and events["correlation"].iat[first[0]] == MISSING:
        return "external_id"
    return "correlation"


def link_launches(events: pd.DataFrame) -> Links:
    """Map each GPU event to the runtime/driver event that launched it."""
    key = choose_key(events)
    cat = events["cat"]
    runtime = events.loc[cat.isin(LAUNCH_CATEGORIES).to_numpy(), ["name", "pid", key]]
    runtime = runtime[runtime[key] != MISSING]
    gpu = events.loc[cat.isin(GPU_CATEGORIES).to_numpy(), ["pid", "tid", key]]
    gpu = gpu[gpu[key] != MISSING]
    flows = events.loc[(cat == "ac2g").to_numpy(), ["ph", "pid", "tid", "flow_id"]]
    launch = np.full(len(events), MISSING, dtype=np.int64)

    is_graph = runtime["name"].astype(str).isin(GRAPH_LAUNCH_NAMES).to_numpy()
    by_flow = len(flows) > 0
    pairs = [_graph_pairs(runtime[is_graph], gpu, key)]
    if by_flow:
        pairs.append(_flow_pairs(runtime[~is_graph], gpu, flows, key))
    else:
        pairs.append(_id_pairs(runtime[~is_graph], gpu, key))
    for launch_uid, gpu_uid in pairs:
        launch[gpu_uid] = launch_uid
    hosts_per_id = runtime.groupby(key)["pid"].nunique()
    return Links(
        key=key,
        launch=launch,
        by_flow=by_flow,
        colliding_ids=int((hosts_per_id > 1).sum()),
    )


def _graph_pairs(graph: pd.DataFrame, gpu: pd.DataFrame, key: str) -> tuple[np.ndarray, ...]:
    """A graph replay owns every GPU event that carries its launch id."""
    joined = (
        graph[[key]].reset_index(names="launch").merge(gpu[[key]].reset_index(names="gpu"), on=key)
    )
    return joined["launch"].to_numpy(), joined["gpu"].to_numpy()


def _flow_pairs(
    runtime: pd.DataFrame, gpu: pd.DataFrame, flows: pd.DataFrame, key: str
) -> tuple[np.ndarray, ...]:
    """Launch id -> flow start and finish -> the GPU event on the finish's (pid, tid)."""
    ph = flows["ph"].astype(str)
    starts = flows.loc[(ph == "s").to_numpy(), "flow_id"].unique()
    finish = flows[(ph == "f").to_numpy()].drop_duplicates("flow_id", keep="last")
    finish = finish.rename(columns={"flow_id": key})[[key, "pid", "tid"]]
    launches = runtime[runtime[key].isin(starts)][[key]].reset_index(names="launch")
    target = launches.merge(finish, on=key)
    gpu_index = gpu.reset_index(names="gpu").drop_duplicates(["pid", "tid", key], keep="last")
    joined = target.merge(gpu_index, on=["pid", "tid", key])
    return joined["launch"].to_numpy(), joined["gpu"].to_numpy()


def _id_pairs(runtime: pd.DataFrame, gpu: pd.DataFrame, key: str) -> tuple[np.ndarray, ...]:
    """Without flow events, a launch owns the GPU events that carry its id."""
    last_launch = runtime[[key]].reset_index(names="launch").drop_duplicates(key, keep="last")
    joined = last_launch.merge(gpu[[key]].reset_index(names="gpu"), on=key)
    return joined["launch"].to_numpy(), joined["gpu"].to_numpy()
