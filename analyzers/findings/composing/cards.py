"""The report's cards, numbered once for the whole report (docs/analysis.md#the-report).

Every `priority_data.items` entry is one card in the section of its kind (compute, kernel
fusion, system) carrying its report-wide P-number, its saving in ms and % of the window, and
the card of its findings file when there is one (a short card from the item's numbers when
not). System cards that no item stands for (a second card on the same time, a flagged issue
under 1 % of the window) follow the ranked ones, numbered after the last item, with the
saving they do not have said in words.

Which item a card stands for: compute and kernel-fusion cards by their rank in their file
(the item's `source_rank`); system cards by the part of the window their issue is about,
in the order the drafts write them (docs/analysis.md#drafts).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ...categories.any_metrics import Metrics
from ...categories.cpu_idle import CpuIdleMetrics
from ...categories.multi_kernel import MultiKernelMetrics
from ...layout import TIMELINE_SYSTEM_KEYS
from ...markdown_text import md_cell, md_code
from ...replay.what_if import PathItem
from ...trace.time_ranges import TimeRanges
from ..contract.contract import (
    NOT_QUANTIFIABLE,
    SYSTEM_IMPACT_SENTENCE,
    DetailBlock,
    Findings,
    Marker,
    PItem,
    Section,
    Status,
)
from ..drafting.copy_draft import has_copy_card
from ..ranking.candidates import MIN_SYSTEM_SHARE
from ..ranking.impact_scale import Pool, PriorityItem
from ..ranking.precision_item import KEY as PRECISION_KEY
from ..ranking.precision_item import precision_action
from ..ranking.replay_figures import ReplayPrice
from ..ranking.run_metrics import RunMetrics
from ..ranking.unmodelled import reason_md
from ..ranking.unmodelled_group import UNMODELLED_KEY, unmodelled_pair

TIERS = {"compute": "compute", "kernel_fusion": "fusion", "system": "system"}
COVERAGE_RE = re.compile(r"perf-model coverage (\d+/\d+ kernels)")
# what each pool of the window is, in words (the cap of an item drawing on it)
POOL_WORDS: dict[str, str] = {
    "kernels": "its kernels' time",
    "idle": "the GPU idle time",
    "exposed_memcpy": "the exposed copy time",
    "exposed_comm": "the exposed communication time",
}


@dataclass(frozen=True)
class Placed:
    """A card and its Detailed Analysis block, with its report-wide P-number and the item it
    stands for (None: a card no item ranks; `note` says why it has no saving)."""

    key: str  # the analysis the card comes from
    tier: str
    number: int
    card: PItem
    block: DetailBlock
    item: PriorityItem | None = None
    note: str = NOT_QUANTIFIABLE


def ms(value: float, like: float | None = None) -> str:
    """Milliseconds with the digits the size of `like` (default: the value) needs:
    0.054, 3.21, 735.9."""
    size = value if like is None else like
    if size >= 100:
        return f"{value:.1f}"
    return f"{value:.2f}" if size >= 1 else f"{value:.3f}"


def ms_range(low: float, high: float) -> str:
    """'low–high', both with the digits of `high`."""
    return f"{ms(low, high)}–{ms(high)}"


def saving_text(item: PriorityItem) -> str:
    """'low–high ms (mid x ms, y % of the window)', or 'not quantifiable: <reason>' (Markdown:
    a perf model's own message is a code span)."""
    s = item.saving
    if s is None:
        return f"not quantifiable: {reason_md(item.unquantified_reason or '')}"
    return (
        f"{ms_range(s.low_ms, s.high_ms)} ms (mid {ms(s.mid_ms, s.high_ms)} ms, "
        f"{item.percent_mid:.2f} % of the window)"
    )


def cap_text(item: PriorityItem) -> str:
    if item.saving is None:
        return "—"
    return f"{POOL_WORDS[item.saving.pool]}, {ms(item.saving.cap_ms)} ms"


def item_marker(item: PriorityItem) -> Marker:
    """The card's p_item marker: % of the window (low/mid/high) and ms; all null for an
    unquantified item."""
    s = item.saving
    if s is None:
        return null_marker(item.p_number, item.category)
    attrs = (
        ("p", str(item.p_number)),
        ("category", item.category),
        ("low", f"{item.percent_low}"),
        ("mid", f"{item.percent_mid}"),
        ("high", f"{item.percent_high}"),
        ("low_ms", f"{round(s.low_ms, 4)}"),
        ("mid_ms", f"{round(s.mid_ms, 4)}"),
        ("high_ms", f"{round(s.high_ms, 4)}"),
    )
    return Marker("p_item", attrs)


def null_marker(number: int, category: str) -> Marker:
    nulls = tuple((k, "null") for k in ("low", "mid", "high"))
    return Marker("p_item", (("p", str(number)), ("category", category), *nulls))


def system_pools(key: str, metrics: Metrics | None) -> list[Pool]:
    """The pool of the window each drafted system card of `key` is about, in card order."""
    if isinstance(metrics, CpuIdleMetrics):
        return ["idle"] if metrics.idle_flagged else []
    if not isinstance(metrics, MultiKernelMetrics) or metrics.status != "SUCCESS":
        return []
    pools: list[Pool] = []
    if has_copy_card(metrics):
        pools.append("exposed_memcpy")  # one card for all copies
    pools += ["exposed_comm"] if metrics.nccl_blocking_assessment.flagged else []
    pools += ["exposed_comm"] if metrics.overlap_assessment.flagged else []
    return pools


def _usable(found: Findings | None) -> Findings | None:
    return found if found is not None and found.status != Status.ERROR else None


def _blocks(found: Findings | None) -> dict[int, DetailBlock]:
    return {b.rank: b for b in found.details} if found else {}


class _Cards:
    """The findings files' cards, each claimed at most once."""

    def __init__(self, findings: Mapping[str, Findings], metrics: Mapping[str, Metrics]):
        self.files = {k: f for k, v in findings.items() if (f := _usable(v)) is not None}
        # (file, number) -> the first card of that number and its Detailed Analysis block
        self.pairs: dict[tuple[str, int], tuple[PItem, DetailBlock]] = {}
        for key, found in self.files.items():
            blocks = _blocks(found)
            for card in found.cards:
                if card.number in blocks:
                    self.pairs.setdefault((key, card.number), (card, blocks[card.number]))
        systems = RunMetrics.of(metrics).timeline_systems()
        self.pools = {k: system_pools(k, m) for k, m in systems.items()}
        self.claimed: set[tuple[str, int]] = set()

    def pair(self, key: str, number: int) -> tuple[PItem, DetailBlock] | None:
        if (key, number) not in self.pairs or (key, number) in self.claimed:
            return None
        self.claimed.add((key, number))
        return self.pairs[(key, number)]

    def for_item(self, item: PriorityItem, items: list[PriorityItem]) -> tuple | None:
        """The card `item` stands for. A system card covers its whole pool, so it stands for
        an item only when no other item of its analysis draws on that pool (cpu_idle's one
        idle card and several idle causes: each cause gets its own card)."""
        if item.kind != "system":
            return self.pair(item.category, item.source_rank or 0)
        pool = _pool(item)
        sharing = [i for i in items if (i.category, _pool(i)) == (item.category, pool)]
        if len(sharing) > 1:
            return None
        for number, pool in enumerate(self.pools[item.category], start=1):
            if pool == _pool(item) and (item.category, number) not in self.claimed:
                return self.pair(item.category, number)
        return None

    def left(self, keys: list[str]) -> Iterator[tuple[str, PItem, DetailBlock]]:
        """Cards no item claimed, file by file in `keys` order, in card order."""
        for key in [k for k in keys if k in self.files]:
            blocks = _blocks(self.files[key])
            for card in self.files[key].cards:
                if (key, card.number) not in self.claimed and card.number in blocks:
                    yield key, card, blocks[card.number]


def placed_cards(
    items: list[PriorityItem], findings: Mapping[str, Findings], metrics: Mapping[str, Metrics]
) -> list[Placed]:
    """Every card of the report: the items' in P order, then the system cards no item stands
    for (compute and fusion cards all have items: their findings are the items' sources)."""
    cards = _Cards(findings, metrics)
    placed = []
    for item in items:
        pair = cards.for_item(item, items) or (
            unmodelled_pair(item, metrics) if item.category == UNMODELLED_KEY
            else fallback_pair(item)
        )  # fmt: skip
        placed.append(Placed(item.category, TIERS[item.kind], item.p_number, *pair, item=item))
    number = len(items)
    for key, card, block in cards.left(list(TIMELINE_SYSTEM_KEYS)):
        number += 1
        note = _unranked_note(key, card, cards, items)
        placed.append(Placed(key, "system", number, card, block, note=note))
    return placed


def _unranked_note(key: str, card: PItem, cards: _Cards, items: list[PriorityItem]) -> str:
    """Why a card no item claimed has no saving of its own: the items its time is counted in."""
    pools = cards.pools[key]
    pool = pools[card.number - 1] if 0 < card.number <= len(pools) else None
    same = [i for i in items if i.category == key and pool and _pool(i) == pool]
    if not same and pool in ("exposed_memcpy", "exposed_comm"):
        # the only reason these pools give no item (findings/ranking/candidates.py)
        return f"Not ranked: {POOL_WORDS[pool]} is under {MIN_SYSTEM_SHARE:g} % of the window"
    if not same or pool is None:
        return NOT_QUANTIFIABLE
    where = ", ".join(f"P{i.p_number}" for i in same)
    return f"Counted in {where} ({POOL_WORDS[pool]} it draws on)"


def _pool(item: PriorityItem) -> Pool | None:
    return item.saving.pool if item.saving else None


def fallback_pair(item: PriorityItem) -> tuple[PItem, DetailBlock]:
    """A short card and block from the item alone, when its findings file has none."""
    worth = f"it could save {saving_text(item)}" if item.saving else saving_text(item)
    insight = f"{item.title}; {worth}."
    action = (
        precision_action(item.title)
        if item.category == PRECISION_KEY
        else "Re-run the analysis and draft its findings to get the full card."
        if item.kind != "system"
        else f"See {md_code(item.category + '_metrics.json')} for where this time goes (for "
        "idle time, `host_side`: its causes and the call sites the host waited in)."
    )
    card = PItem(
        item.source_rank or 0, item.title, fields=(("Insight", insight), ("Action", action))
    )
    ident = (
        f"No findings card stands for this item, so only its numbers are shown (source: "
        f"`priority_data.json` → `items[p_number={item.p_number}]`)."
    )
    block = DetailBlock(
        TIERS[item.kind], 0, item.title, sections=(Section("Identification", ident),)
    )
    return card, block


def impact_text(placed: Placed) -> str:
    """The card's Impact line: the saving, or why there is none."""
    if placed.item is None:
        return placed.note
    text = saving_text(placed.item)
    coverage = COVERAGE_RE.search(placed.card.impact_text or "")
    if placed.tier == "fusion" and coverage:
        text += f"; perf-model coverage {coverage.group(1)}"
    return text


def estimate_section(placed: Placed) -> Section:
    """The block's Impact estimate: the item's range, its cap and how it was computed."""
    item = placed.item
    if item is None:
        old = placed.block.section("Impact estimate")
        return old or Section("Impact estimate", SYSTEM_IMPACT_SENTENCE)
    where = [f"- {where_text(item.time_ranges)}"] if item.time_ranges else []
    if item.saving is None:
        lines = [f"- Saving: {saving_text(item)}", "- Counted in no total, bar or top fix.", *where]
        return Section("Impact estimate", body="\n".join(lines))
    marker = Marker(
        "detail_estimate", (("low", f"{item.percent_low}"), ("high", f"{item.percent_high}"))
    )
    lines = [
        marker.render(),
        f"- Saving: {saving_text(item)}",
        f"- Range in % of the window: {item.percent_low}–{item.percent_high}",
        f"- Capped by {cap_text(item)}",
        f"- How: {item.saving.basis}",
        *replay_lines(item),
        *where,
        "<!-- impact-end -->",
    ]
    return Section("Impact estimate", body="\n".join(lines))


def us(value: float) -> str:
    """A trace timestamp or length in µs, to the µs: 7,001,254,304."""
    return f"{value:,.0f}"


def where_text(ranges: TimeRanges) -> str:
    """'Where in the trace: …' (µs on the trace's clock, docs/trace-viewer.md): how many
    ranges, their span and the longest few."""
    shown = ranges.brief()
    longest = ", ".join(f"{us(r.start_us)}–{us(r.end_us)}" for r in shown.longest)
    many = ranges.count > 1
    return (
        f"Where in the trace: {ranges.count} range{'s' if many else ''}, "
        f"{ms(ranges.total_us / 1e3)} ms in all, from {us(ranges.first_us)} to "
        f"{us(ranges.last_us)} µs (trace clock)" + (f"; longest: {longest} µs" if many else "")
    )


NAMES_SHOWN = 3  # names of a finding's events a line shows


def events_cell(price: ReplayPrice) -> str:
    names = ", ".join(md_cell(n, 60) for n in price.names[:NAMES_SHOWN])
    more = f" and {len(price.names) - NAMES_SHOWN} more" if len(price.names) > NAMES_SHOWN else ""
    return f"{price.events} {price.event_kind} of {names}{more}"


def path_words(price: ReplayPrice) -> str:
    if not price.on_path:
        return "off"
    return f"{price.path_share * 100:.0f} % of their time"


def replay_lines(item: PriorityItem) -> list[str]:
    """The card's lines on the replay: the path, and the predicted step where a change
    expresses the finding (Markdown, names as code spans)."""
    price = item.replay
    if price is None:
        if item.saving is None:
            return []
        return ["- Replay: no change the replay can express; the saving is a flat estimate."]
    names = ", ".join(md_code(n, 60) for n in price.names[:NAMES_SHOWN])
    on = (
        f"on the critical path for {price.path_share * 100:.0f} % of their time"
        if price.on_path
        else "off the critical path"
    )
    lines = [f"- Critical path: its {price.events} {price.event_kind} of {names} are {on}."]
    if price.predicted_step_ms is None:
        if item.saving is not None:
            lines.append("- Replay: no change expresses it; the saving is a flat estimate.")
        return lines
    lines.append(
        f"- Replayed ({price.change}): time per step {ms(price.step_ms)} → "
        f"{ms(price.predicted_step_ms)} ms, {ms(price.step_saving_mid_ms or 0.0)} ms saved per "
        f"step ({ms_range(price.step_saving_low_ms or 0.0, price.step_saving_high_ms or 0.0)})"
        f"{next_on_path(price.critical_next)}."
    )
    return lines


def next_on_path(item: PathItem | None) -> str:
    if item is None:
        return ""
    return f"; then {md_code(item.name, 80)} ({item.kind}) leads the critical path"
