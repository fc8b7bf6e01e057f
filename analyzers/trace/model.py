"""The linked trace every later stage reads: events, launches, host tree, autograd, stacks.

`build_model` runs the stages in order (the sqlglot RULES idea, in five lines) and each
derived fact is one integer column indexed by uid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import pandas as pd

from .autograd import AutogradLinks, link_autograd
from .capture import CaptureTrace
from .columns import MISSING, name_matches
from .graft import CaptureMerge, graft_captures
from .link import Links, link_launches
from .load import Trace
from .op_names import normalise_op_names
from .pseudo import insert_pseudo_ops
from .schema import GPU_CATEGORIES
from .timeline import GpuTimeline, classify_events, gpu_timeline
from .tree import (
    BleedPolicy,
    HostTree,
    ancestors,
    build_host_tree,
    nearest_ancestor,
)

MODULE_PREFIX = "nn.Module:"


@dataclass(frozen=True)
class TraceModel:
    """A decoded trace with its links; `launcher[uid]` is a GPU event's nearest cpu_op.

    With a capture merge, `events` ends with the grafted capture-time rows, then any pseudo
    ops (pseudo.py): uids from `recorded_events` on are not in the file (see graft.py).
    """

    trace: Trace
    links: Links
    tree: HostTree
    autograd: AutogradLinks
    launcher: np.ndarray
    module: np.ndarray  # innermost enclosing `nn.Module:` python frame, or -1
    recorded_events: int = -1  # -1: every row is recorded (no merge, no pseudo op)
    capture: CaptureMerge | None = None

    @property
    def recorded(self) -> pd.DataFrame:
        """The events the trace file holds (grafted capture rows left out)."""
        if self.recorded_events < 0:
            return self.events
        return self.events.iloc[: self.recorded_events]

    @property
    def events(self) -> pd.DataFrame:
        return self.trace.events

    @cached_property
    def names(self) -> np.ndarray:
        """Event name per uid, as an object array sharing the category strings (no copies)."""
        names = self.events["name"].array
        table = np.asarray(names.categories, dtype=object)
        return np.append(table, None)[names.codes]

    @cached_property
    def gpu(self) -> pd.DataFrame:
        """GPU events with their device, launch and launcher (one row per kernel/copy/set)."""
        ev = self.events
        mask = ev["cat"].isin(GPU_CATEGORIES).to_numpy()
        gpu = ev.loc[mask, ["cat", "name", "pid", "tid", "ts", "dur", "stream", "device"]]
        uids = np.flatnonzero(mask)
        device = gpu["device"].to_numpy()
        launch = self.links.launch[uids]
        gpu = gpu.assign(cat=gpu["cat"].astype(str))
        return gpu.assign(
            bucket=classify_events(gpu),
            device=np.where(device == MISSING, gpu["pid"].to_numpy(), device),
            launch=launch,
            linked=launch != MISSING,
            launcher=self.launcher[uids],
        )

    @cached_property
    def _thread_names(self) -> tuple[dict[int, str], dict[int, str], dict[tuple[int, int], str]]:
        """process_name / process_labels per pid and thread_name per (pid, tid), from M events."""
        ev = self.events
        meta = ev.loc[
            (ev["ph"] == "M").to_numpy(), ["name", "pid", "tid", "meta_name", "meta_labels"]
        ]
        process, label, thread = {}, {}, {}
        for name, pid, tid, text, labels in meta.itertuples(index=False):
            if name == "process_name" and isinstance(text, str):
                process[pid] = text
            elif name == "process_labels" and isinstance(labels, str):
                label[pid] = labels
            elif name == "thread_name" and isinstance(text, str):
                thread[(pid, tid)] = text
        return process, label, thread

    @cached_property
    def thread_code(self) -> np.ndarray:
        """One integer per (pid, tid) of each event (two integer columns hashed, no tuples)."""
        pid = pd.factorize(self.events["pid"].to_numpy())[0].astype(np.int64)
        tid = pd.factorize(self.events["tid"].to_numpy())[0].astype(np.int64)
        return pd.factorize(pid * (int(tid.max(initial=0)) + 1) + tid)[0].astype(np.int64)

    def thread_labels(self, uids: np.ndarray) -> pd.DataFrame:
        """process_name, process_label, thread_name of events ("Unknown" when not recorded)."""
        process, label, thread = self._thread_names
        pids = self.events["pid"].to_numpy()[uids]
        tids = self.events["tid"].to_numpy()[uids]
        return pd.DataFrame(
            {
                "process_name": [process.get(p, "Unknown") for p in pids],
                "process_label": [label.get(p, "Unknown") for p in pids],
                "thread_name": [
                    thread.get((p, t), "Unknown") for p, t in zip(pids, tids, strict=True)
                ],
            }
        )

    def gpu_timeline(self, *, include_unlinked: bool = False) -> GpuTimeline:
        return gpu_timeline(self.gpu, include_unlinked=include_unlinked)

    def call_stack(self, uid: int) -> list[str]:
        """Names of the enclosing host events, outermost first (python frames included)."""
        names = self.events["name"]
        return [str(names.iat[a]) for a in reversed(ancestors(self.tree.parent, uid))]

    def module_stack(self, uid: int) -> list[str]:
        """Enclosing `nn.Module` classes, outermost first, `_<n>` instance suffix removed."""
        frames = [n for n in self.call_stack(uid) if n.startswith(MODULE_PREFIX)]
        return [_module_class(n) for n in frames]


def _module_class(frame_name: str) -> str:
    """`nn.Module: Qwen2_5Attention_0` -> `Qwen2_5Attention` (only the trailing counter)."""
    head, sep, tail = frame_name[len(MODULE_PREFIX) :].strip().rpartition("_")
    return head if sep and tail.isdigit() else frame_name[len(MODULE_PREFIX) :].strip()


def build_model(
    trace: Trace,
    *,
    bleed: BleedPolicy = "drop",
    captures: Sequence[CaptureTrace] = (),
    capture_folder: str = "",
) -> TraceModel:
    """Link launches, nest the host tree, pair autograd nodes, find launchers and modules.

    With capture traces, replayed graph kernels first get their capture-time operators.
    """
    events = trace.events
    links = link_launches(events)
    tree = build_host_tree(events, links.launch, bleed=bleed)
    recorded, merge = len(events), None
    if captures:
        grafted = graft_captures(events, links.launch, tree.parent, captures, capture_folder)
        merge = grafted.merge
        events = grafted.events
        trace = replace(trace, events=events)
        links = replace(links, launch=grafted.launch)
        tree = replace(tree, parent=grafted.parent)
    pseudo = insert_pseudo_ops(events, links.launch, tree.parent)  # docs/trace.md#pseudo-ops
    if pseudo.inserted:
        events = pseudo.events
        trace = replace(trace, events=events)
        links = replace(links, launch=pseudo.launch)
        tree = replace(tree, parent=pseudo.parent)
    renamed = normalise_op_names(events)  # sglang_profiler::<name>_<line>
    if renamed is not None:
        events = renamed
        trace = replace(trace, events=events)
    autograd = link_autograd(events)
    is_cpu_op = (events["cat"] == "cpu_op").to_numpy()
    is_module = (events["cat"] == "python_function").to_numpy() & name_matches(
        events["name"], lambda n: n.startswith(MODULE_PREFIX)
    )
    everyone = np.arange(len(events))
    gpu_uids = np.flatnonzero(events["cat"].isin(GPU_CATEGORIES).to_numpy())
    launcher = np.full(len(events), MISSING, dtype=np.int64)
    launcher[gpu_uids] = nearest_ancestor(tree.parent, is_cpu_op, gpu_uids)
    module = nearest_ancestor(tree.parent, is_module, everyone)
    return TraceModel(
        trace=trace,
        links=links,
        tree=tree,
        autograd=autograd,
        launcher=launcher,
        module=module,
        recorded_events=recorded if len(events) > recorded else -1,
        capture=merge,
    )
