"""Priorities from the replay (docs/what-if.md#priorities-from-the-replay): every finding a
change can express is priced by the step time the replay predicts once it is fixed, and
every finding with events is marked on or off the critical path.

The change per finding: a compute finding's or fusion candidate's kernels take what its
low / mid / high estimate leaves of their time; an idle cause whose fix removes calls (an
allocator's frees, a sync, a loader's wait) has its culprits' host code and waits removed in
one replay (their GPU work kept), and a fix wins back its cause's recovery shares of that
saving; a cause whose fix makes host code faster (dispatch, launches, the optimizer step,
issuing collectives) keeps 1 − those shares of its culprits' host time, one replay each;
exposed communication has the streams that wait for its collectives released after what the
estimate leaves exposed of each (the collectives overlapped).
Savings are per steady step (replay/step_region.py) and, on the impact scale, over the
steps, capped like the flat estimates they replace; findings no change expresses keep their
flat estimate, labelled as such. The top fixes are also replayed together: one replay, not a
sum of savings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...replay.changes import (
    combined,
    gpu_events_scaled,
    host_spans_removed,
    host_spans_shortened,
    waits_released,
)
from ...replay.critical_path import CriticalPath, PathNames, critical_path, median_step_path
from ...replay.graph import CannotReplay, ReplayGraph, build_graph
from ...replay.simulate import Changes, Replayed, replay
from ...replay.step_region import step_region
from ...replay.step_times import StepReplay, replay_steps, step_thread
from ...replay.what_if import TOP_PATH, AssumptionFigure, PathItem
from ...report.unified_table import UnifiedTable
from ...trace.iterations import find_iterations
from ...trace.model import TraceModel
from .finding_events import FindingEvents, finding_events, finding_key
from .idle_advice import CAUSE_RECOVERY
from .impact_scale import Candidate, PriorityItem, Saving
from .replay_figures import CombinedFix, ReplayPrice, ReplaySummary
from .run_metrics import RunMetrics

REMOVED = frozenset({"allocator", "sync", "input_pipeline"})  # the fix removes the calls
SHORTENED = frozenset({"dispatch", "launch_bound", "optimizer_step", "collective_issue"})
TOP_FIXES = 3
NOISE_MS = 1e-3  # a replayed saving per step under 1 µs is below the trace's resolution


@dataclass(frozen=True)
class ReplayInputs:
    """What the replay reads besides the metrics: the trace and the unified table (whose
    attribution names each operator instance's kernels)."""

    model: TraceModel
    unified: UnifiedTable | None


class ReplayPricer:
    """One run's graph and identity replay, shared by every finding's price."""

    def __init__(self, model: TraceModel, run: RunMetrics, unified: UnifiedTable | None) -> None:
        self.model, self.run, self.unified = model, run, unified
        self.found: dict[tuple, FindingEvents | None] = {}
        self.graph: ReplayGraph | None = None
        self.reason = ""
        try:
            self.graph = build_graph(model)
        except CannotReplay as exc:
            self.reason = str(exc)
            return
        self.iterations = find_iterations(model)
        self.base = replay_steps(self.graph, self.iterations)
        self.thread = step_thread(self.graph)
        self.region = step_region(model, self.graph, self.iterations, self._steady_positions())
        replayed = replay(self.graph)
        self.identity = self.region.times(self.graph, replayed)
        self.names = PathNames(model, self.graph)
        self.path = self._critical_path(replayed, self.region.begin, self.region.end)
        self.changes: dict[tuple[str, str, int], Changes] = {}

    @property
    def replayable(self) -> bool:
        return self.graph is not None

    # -- pricing -------------------------------------------------------------------------

    def priced(self, candidates: list[Candidate]) -> list[Candidate]:
        """Each candidate with its replay price; an expressible one's saving replaced."""
        if not self.replayable:
            return candidates
        return [self._price(c) for c in candidates]

    def events_of(self, c: Candidate) -> FindingEvents | None:
        """The finding's events (finding_events.py), found once per finding."""
        key = (*finding_key(c), c.saving.pool if c.saving else None, c.title)
        if key not in self.found:
            self.found[key] = finding_events(c, self.run, self.model, self.unified)
        return self.found[key]

    def _price(self, c: Candidate) -> Candidate:
        events = self.events_of(c)
        if events is None or events.empty:
            return c
        share = self._path_share(events)
        price = ReplayPrice(
            events=len(events.gpu) + len(events.host),
            event_kind="kernels" if len(events.gpu) else "calls",
            names=list(events.names),
            path_share=round(share, 4),
            step_ms=round(self.time_per_step_ms, 3),
        )
        ranges = self._changes(c, events)
        if ranges is None or c.saving is None:
            return c.model_copy(update={"replay": price})
        saved: dict[int, tuple[tuple[float, float], Replayed]] = {}  # one replay per change
        for changes, _ in ranges:
            if id(changes) not in saved:
                saved[id(changes)] = self._saved(changes)
        low, mid, high = (tuple(v * f for v in saved[id(ch)][0]) for ch, f in ranges)
        replayed = saved[id(ranges[1][0])][1]
        self.changes[finding_key(c)] = ranges[2][0]  # the high bound, for the fixes together
        seen = [_capped(self._resolved(x), c.saving.cap_ms) for x in (low, mid, high)]
        per_step = [round(x[0], 3) for x in seen]
        window = [x[1] for x in seen]
        price = price.model_copy(
            update={
                "change": self._wording(c, events),
                "flat_mid_ms": c.saving.mid_ms,
                "predicted_step_ms": round(price.step_ms - per_step[1], 3),
                "step_saving_low_ms": per_step[0],
                "step_saving_mid_ms": per_step[1],
                "step_saving_high_ms": per_step[2],
                "critical_next": self._leader(replayed),
            }
        )
        basis = _basis(c, price, self.region.steady is not None, c.saving.basis)
        saving = Saving(
            low_ms=window[0], mid_ms=window[1], high_ms=window[2], cap_ms=c.saving.cap_ms,
            pool=c.saving.pool, basis=basis,
        )  # fmt: skip
        return c.model_copy(update={"saving": saving, "replay": price})

    def _changes(self, c: Candidate, events: FindingEvents) -> list[tuple[Changes, float]] | None:
        """The low, mid and high change of a finding, each with the share of its replayed
        saving that counts; None when no change expresses the finding."""
        if c.saving is None:
            return None
        if events.collectives:  # overlapped: other streams wait for what is left exposed
            return (
                [
                    (waits_released(self.graph, events.gpu, 1 - ms / c.saving.cap_ms, c.title), 1.0)
                    for ms in c.saving.range_ms
                ]
                if c.saving.cap_ms > 0
                else None
            )
        if len(events.gpu):
            touched = float(self.graph.gpu.dur[np.isin(self.graph.gpu.uid, events.gpu)].sum())
            if touched <= 0:
                return None
            return [
                (gpu_events_scaled(self.graph, events.gpu, _left(ms, touched), c.title), 1.0)
                for ms in c.saving.range_ms
            ]
        cause = self._cause(c)
        if cause in REMOVED:  # one replay of the calls removed; a fix wins back a share of it
            removal = host_spans_removed(
                self.model, self.graph, events.host, c.title, keep_gpu=True
            )
            return [(removal, f) for f in CAUSE_RECOVERY[cause]]
        if cause in SHORTENED:
            return [
                (host_spans_shortened(self.model, self.graph, events.host, 1 - f, c.title), 1.0)
                for f in CAUSE_RECOVERY[cause]
            ]
        return None

    def _wording(self, c: Candidate, events: FindingEvents) -> str:
        """The mid change in words: what happens to the finding's events."""
        if events.collectives:
            share = (1 - c.saving.mid_ms / c.saving.cap_ms) * 100 if c.saving else 100.0
            return f"overlapped: other streams wait for {share:g} % of each"
        if len(events.gpu):
            if c.kind == "kernel_fusion":
                return "fused, at what the fused kernel's estimate leaves of their time"
            return "at what the mid estimate leaves of their time"
        cause = self._cause(c)
        share = CAUSE_RECOVERY[cause][1] * 100 if cause else 0.0
        if cause in REMOVED:
            return (
                f"removed, host code and waits (their GPU work kept); a fix wins back {share:g} "
                "% of that"
            )
        return f"their host code {share:g} % faster"

    def _cause(self, c: Candidate) -> str | None:
        idle = self.run.cpu_idle
        if idle is None or idle.host_side is None:
            return None
        k = (c.source_rank or 0) - 1
        causes = idle.host_side.idle_causes
        return causes[k].cause if 0 <= k < len(causes) else None

    # -- replays -------------------------------------------------------------------------

    def _saved(self, changes: Changes) -> tuple[tuple[float, float], Replayed]:
        """((saving per step, saving over the region's steps) in ms, the replay)."""
        replayed = replay(self.graph, changes)
        after = self.region.times(self.graph, replayed, changes.host_removed)
        per_step, total = self.region.saving_us(self.identity, after)
        # a finding's change only moves work earlier: a slower pace is the window's edge
        # (the first step done sooner than the last), not a cost
        return (max(0.0, per_step) / 1e3, max(0.0, total) / 1e3), replayed

    @property
    def time_per_step_ms(self) -> float:
        return self.identity.per_step_us / 1e3

    def _resolved(self, saved: tuple[float, float]) -> tuple[float, float]:
        """A saving per step within the identity replay's own error on a step (at least 1 µs)
        is none the replay can tell from noise: (0, 0)."""
        steps = [i for i in self.base.iterations
                 if self.region.holds(i.index)]  # fmt: skip
        error = max([abs(i.replayed_ms - i.measured_ms) for i in steps], default=0.0)
        return saved if abs(saved[0]) > max(error, NOISE_MS) else (0.0, 0.0)

    def _steps(self, replayed: StepReplay) -> list[float]:
        return [i.replayed_ms for i in replayed.iterations if self.region.holds(i.index)]

    def _step(self, replayed: StepReplay) -> float:
        steps = self._steps(replayed)
        return float(np.median(steps)) if steps else replayed.window_replayed_ms

    def _leader(self, replayed: Replayed) -> PathItem | None:
        """The largest item of the median steady iteration's path in a changed replay."""
        top = self._median_path(replayed).top(1)
        return _items(top)[0] if top else None

    def _median_path(self, replayed: Replayed) -> CriticalPath:
        return median_step_path(
            self.model, self.graph, replayed, self.iterations, self.thread, self.names,
            self.region.holds,
        )  # fmt: skip

    def _critical_path(self, replayed: Replayed, begin: float, end: float) -> CriticalPath:
        return critical_path(self.model, self.graph, replayed, self.thread, begin, end, self.names)

    def _steady_positions(self) -> list[int] | None:
        """The steady iterations' positions, from the idle analysis's phases (None: all)."""
        if not self._has_phases():
            return None
        phases = self.run.cpu_idle.host_side.phases
        return list(phases.steady) if phases is not None and phases.steady else None

    def _has_phases(self) -> bool:
        idle = self.run.cpu_idle
        return idle is not None and idle.host_side is not None

    def _path_share(self, events: FindingEvents) -> float:
        """Share of the finding's own time in the region that lies on the critical path."""
        lo, hi = self.region.begin, self.region.end
        if len(events.gpu):
            gpu = self.graph.gpu
            mine = np.isin(gpu.uid, events.gpu) & (gpu.start >= lo) & (gpu.start < hi)
            total = float(gpu.dur[mine].sum())
            on = np.zeros(len(gpu.uid), dtype=bool)
            on[list(self.path.gpu_events)] = True
            return float(gpu.dur[mine & on].sum()) / total if total > 0 else 0.0
        ev = self.model.events
        ts = ev["ts"].to_numpy(float)[events.host]
        end = ts + ev["dur"].to_numpy(float)[events.host]
        start, end = np.clip(ts, lo, hi), np.clip(end, lo, hi)
        thread = self.model.thread_code[events.host]
        total = float((end - start).sum())
        if total <= 0:
            return 0.0
        on = sum(
            self.path.host_us(int(t), start[thread == t], end[thread == t])
            for t in np.unique(thread).tolist()
        )
        return on / total

    # -- the run's figures ---------------------------------------------------------------

    def summary(self, items: list[PriorityItem]) -> ReplaySummary:
        if not self.replayable:
            return ReplaySummary(replayable=False, reason=self.reason)
        base = self.base
        steps = self._steps(base)
        measured = [i.measured_ms for i in base.iterations
                    if self.region.holds(i.index)]  # fmt: skip
        measured_step = float(np.median(measured)) if measured else base.window_measured_ms
        span = self.path.span_us or 1.0
        return ReplaySummary(
            replayable=True,
            measured_step_ms=round(measured_step, 3),
            replayed_step_ms=round(self._step(base), 3),
            replay_error_pct=round(base.replay_error_pct, 4),
            steps=len(steps),
            time_per_step_ms=round(self.time_per_step_ms, 3),
            critical_path=_items(self.path.top(TOP_PATH)),
            by_kind={k: round(us / span, 4) for k, us in self.path.by_kind().items()},
            combined=self._together(items),
            assumptions=[
                AssumptionFigure(rule=a.rule, events=a.events, ms=round(a.us / 1e3, 3))
                for a in base.assumptions
            ],
        )

    def _together(self, items: list[PriorityItem]) -> CombinedFix | None:
        """The top fixes the replay priced, replayed together (two at least), each at its
        high bound (a removal complete)."""
        fixes = [i for i in items if i.saving is not None and i.saving.high_ms > 0]
        chosen = [i for i in fixes[:TOP_FIXES] if finding_key(i) in self.changes]
        if len(chosen) < 2:
            return None
        together = combined(self.graph, [self.changes[finding_key(i)] for i in chosen])
        (per_step, _), replayed = self._saved(together)
        step = self.time_per_step_ms
        return CombinedFix(
            p_numbers=[i.p_number for i in chosen],
            predicted_step_ms=round(step - per_step, 3),
            saving_ms=round(per_step, 3),
            sum_of_savings_ms=round(
                sum(i.replay.step_saving_high_ms or 0.0 for i in chosen if i.replay), 3
            ),
            critical_next=self._leader(replayed),
        )


def _capped(saved: tuple[float, float], cap_ms: float) -> tuple[float, float]:
    """A saving no larger than the time its finding holds in the window (the step's share
    cut alike), as every saving on the impact scale."""
    per_step, window = saved
    if window <= cap_ms or window <= 0:
        return saved
    return per_step * cap_ms / window, cap_ms


def _items(top: list[tuple[str, str, float, float]]) -> list[PathItem]:
    return [
        PathItem(kind=k, name=n, ms=round(us / 1e3, 3), share=round(share, 4))
        for k, n, us, share in top
    ]


def _left(saving_ms: float, touched_us: float) -> float:
    """The factor on a finding's kernels that takes `saving_ms` off their time."""
    return float(np.clip(1 - saving_ms * 1e3 / touched_us, 0.0, 1.0))


def _basis(c: Candidate, price: ReplayPrice, steady: bool, flat: str) -> str:
    """How the replayed saving was found, with the flat estimate's own basis (the change's
    size comes from it) kept in parentheses."""
    where = "the steady-state steps" if steady else "the window"
    path = (
        f"{price.path_share * 100:.0f} % of its time is on the critical path"
        if price.on_path
        else "it is off the critical path"
    )
    what = {
        "compute": "its kernels at what the estimate leaves of their time",
        "kernel_fusion": "its kernels at what the fused kernel would leave of their time",
        "system": "its calls' host code removed (a share of that saving won back) or "
        "shortened by the share a fix recovers",
    }[c.kind]
    return f"replayed: the time per step predicted with {what}, over {where} ({flat}); {path}"
