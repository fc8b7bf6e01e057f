"""What the replay says of the findings, as documents: each finding's price
(`ReplayPrice`, on every priority item the replay could place) and the run's figures
(`ReplaySummary`, written as `critical_path.json`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...replay.what_if import AssumptionFigure, PathItem

ON_PATH = 0.05  # a finding with at least this share of its time on the path is on it


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ReplayPrice(Frozen):
    """What the replay says of one finding: its events and how much of their time lies on
    the critical path; when a change expresses the finding, the time per step it predicts
    and the saving per step (the steady region's work done, per step), low / mid / high.
    `names` and `critical_next` hold trace text."""

    events: int
    event_kind: Literal["kernels", "calls"]
    names: list[str]  # the operators, module or calls the events are of
    path_share: float  # share of the finding's own time on the critical path
    step_ms: float  # the replayed step before the change
    change: str | None = None  # the change replayed, in rooflens's words (no trace text)
    flat_mid_ms: float | None = None  # the flat estimate the replay replaced (window ms)
    predicted_step_ms: float | None = None  # None: no change expresses the finding
    step_saving_low_ms: float | None = None
    step_saving_mid_ms: float | None = None
    step_saving_high_ms: float | None = None
    critical_next: PathItem | None = None  # what leads the critical path once fixed

    @property
    def on_path(self) -> bool:
        return self.path_share >= ON_PATH


class CombinedFix(Frozen):
    """The top fixes replayed together, each at its high bound (a removal complete)."""

    p_numbers: list[int]
    predicted_step_ms: float
    saving_ms: float  # per step
    sum_of_savings_ms: float  # what adding their own high savings would have claimed
    critical_next: PathItem | None


class ReplaySummary(Frozen):
    """`critical_path.json`: the identity replay, the critical path of the steady iterations,
    the top fixes together; `reason` says why a trace cannot be replayed."""

    replayable: bool
    reason: str = ""
    measured_step_ms: float = 0.0
    replayed_step_ms: float = 0.0
    replay_error_pct: float = 0.0
    steps: int = 0  # iterations the step figures come from (0: the whole window)
    # time per steady step: each step's work done (its calls and the GPU work they launched)
    # from the first step's end to the last's, per step (one step: its span); the priorities'
    # steps and savings are measured in it
    time_per_step_ms: float = 0.0
    critical_path: list[PathItem] = []
    by_kind: dict[str, float] = {}  # share of the path per kind of segment
    combined: CombinedFix | None = None
    assumptions: list[AssumptionFigure] = []


class PricedItem(Frozen):
    """One ranked finding as the critical-path view shows it."""

    p_number: int
    category: str
    kind: str
    on_path: bool
    price: ReplayPrice


class CriticalPathView(Frozen):
    """`rooflens://runs/<id>/critical_path`: the replay's figures and every finding it placed
    (their own events on or off the path, and what a fix would buy), small enough for a
    model: the path's ten largest items, one line per finding."""

    replay: ReplaySummary
    findings: list[PricedItem]
