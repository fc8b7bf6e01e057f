"""Level-1 validator for findings markdown files (docs/analysis.md#findings-validation).

Every problem carries a rule id, a 1-based line number and a message that says what is
wrong and how to fix it.  Rules (one line each):

F0  the file exists and is not empty.
F1  both ``## Recommendations`` and ``## Detailed Analysis`` heading lines are present.
F2  ``## Recommendations`` comes before ``## Detailed Analysis``.
F3  findings present: >=1 ``### P<N>:`` card; nothing to report: no card at all.
F4  every card has ``**Insight**``, ``**Action**``, ``**Impact**`` (fusion also ``**Confidence**``).
F5  findings present: >=1 reasoning-candidate; nothing to report: no candidate at all.
F6  the number of cards equals the number of reasoning-candidate blocks.
F7  every reasoning-candidate has ``tier=`` equal to the file tier (compute|system|fusion).
F8  compute: every candidate block has a ``**Data:**`` label followed by a pipe table.
F9  compute: that table's header starts with the 10 canonical columns, in order.
F10 compute: every non-empty Args cell is one of the metrics ``operations[].args``.
F11 compute: every non-empty Kernel Path cell is one of ``operations[].launcher_path``.
F12 compute: every Kernel Name cell (not ``—``) is one of ``operations[].kernel_name_trunc``.
    F10–F12 compare each cell with the metrics value rendered as the drafts write it
    (``md_cell_lines``: a code span per ``<br>`` part; docs/analysis.md#trace-text-in-markdown).
M1  every ``impact-begin`` is closed by one ``impact-end`` (no nesting, no stray end).
M2  every ``impact-begin`` carries a ``kind=`` attribute.
M3  ``kind`` is one of p_item, detail_estimate, top_ops.
M4  p_item has low, mid, high; detail_estimate has low, high.
M5  values are all numeric or all null; p_item is all null in system tier, numeric elsewhere.
M6  findings present: >=1 ``kind=p_item``; nothing to report: no p_item marker.
M7  every card holds exactly one ``kind=p_item`` marker.
M8  every candidate block has a detail_estimate marker or the "not quantifiable" sentence.

"Nothing to report" (in every tier, unlike TraceLens: docs/deviations.md#findings-contract) is
a ``Status`` of NO_FINDINGS or ERROR (plain ``Status: X`` or bold ``**Status**: X``), or compute
with ``category_findings == []`` in the metrics JSON; the two sections must then be present and
empty.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from ...markdown_text import md_cell_lines, plain_line
from .contract import (
    BEGIN_RE,
    CANDIDATE_RE,
    COMPARATIVE_COLUMNS,
    DETAIL_HEADING,
    END_RE,
    FIELD_RE,
    P_HEADING_RE,
    REC_HEADING,
    SECTION_RE,
    STANDALONE_COLUMNS,
    Marker,
    Status,
    Tier,
    detect_status,
    is_separator,
    parse_attrs,
    split_row,
)

KNOWN_KINDS = ("p_item", "detail_estimate", "top_ops")
REQUIRED_ATTRS = {"p_item": ("low", "mid", "high"), "detail_estimate": ("low", "high")}
SENTINEL = "not quantifiable from trace data"
NUMBER_RE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# (column names, metrics key, rule id)
CELL_RULES = (
    (("Args", "Args (T1)"), "args", "F10"),
    (("Kernel Path",), "launcher_path", "F11"),
    (("Kernel Name",), "kernel_name_trunc", "F12"),
)


MSG = {
    "F0": "findings file is empty: write ## Recommendations and ## Detailed Analysis "
    "(or a **Status**: NO_FINDINGS file).",
    "F1": "missing required section '{h}': add it on its own line ({where}).",
    "F2": "'## Recommendations' must come before '## Detailed Analysis' (line {det}): move it.",
    "F3": "no '### P<N>:' items under ## Recommendations: add one card per finding, "
    "or set **Status**: NO_FINDINGS.",
    "F3e": "{why} but P-items are present: delete the cards, or set **Status**: SUCCESS.",
    "F4": "card is missing **{label}** (required for {tier} tier): add a '**{label}**: …' line.",
    "F5": "no <!-- reasoning-candidate --> blocks in ## Detailed Analysis: add one block per "
    "P-item, or set **Status**: NO_FINDINGS.",
    "F5e": "{why} but reasoning-candidate blocks are present: delete them, or set SUCCESS.",
    "F6": "P-item count ({a}) does not match reasoning-candidate count ({b}): write exactly one "
    "Detailed Analysis block per card.",
    "F7": "reasoning-candidate tier mismatch: expected tier={tier}, found tier={found} "
    "rank={rank}: set tier={tier}.",
    "F8": "compute block has no **Data:** table: add a '**Data:**' line followed by the "
    "operations pipe table.",
    "F9": "compute Data table header must start with the 10 canonical columns in order "
    "{cols}; got {got}: rename/reorder the columns (extras go last).",
    "cell": "{name} cell does not match operations[].{field} in {cat}_metrics.json "
    "(copy the drafted cell: the value as a code span, one per <br> part, or —): {cell}",
    "M1": "impact-begin is not closed: add '<!-- impact-end -->' after the wrapped line.",
    "M1x": "impact-end without an open impact-begin: delete it or add the impact-begin above.",
    "M2": "impact-begin has no kind= attribute: add kind=p_item or kind=detail_estimate.",
    "M3": "unknown kind={kind}: use one of p_item, detail_estimate, top_ops.",
    "M4": "kind={kind} missing required attr {attrs}: add {attrs} (numbers, or null in system).",
    "M5": "kind={kind} values must be all numbers or all null, got {got}: copy the metrics "
    "numbers verbatim.",
    "M5s": "system-tier p_item markers must be low=null mid=null high=null: system impact is "
    "not quantifiable from trace data.",
    "M5n": "{tier}-tier p_item markers need numeric low/mid/high: copy "
    "impact_score_low/impact_score/impact_score_high.",
    "M6": "missing required kind=p_item marker: wrap each **Impact** line in "
    "'<!-- impact-begin kind=p_item … -->' / '<!-- impact-end -->'.",
    "M6e": "{why} but a kind=p_item marker is present: delete it together with its card.",
    "M7": "card has {count} kind=p_item markers: wrap its **Impact** line in exactly one.",
    "M8": "reasoning-candidate rank={rank} has no kind=detail_estimate marker nor the sentence "
    "'Impact estimate is not quantifiable from trace data.': add one.",
}


class OperationCells(BaseModel):
    """The cells of one ``operations[]`` entry the Data tables copy (F10–F12)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    args: JsonValue = None
    launcher_path: JsonValue = None
    kernel_name_trunc: JsonValue = None


class MetricsCells(BaseModel):
    """What the findings rules read of a ``<cat>_metrics.json``: lenient (every key optional,
    the others ignored), so a partial or hand-made document is still checked."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    category: JsonValue = "<cat>"
    comparison_scope: str | None = None
    category_findings: list[JsonValue] | None = None
    operations: list[OperationCells] | None = None


def first_error(exc: ValidationError) -> str:
    """``where: what`` of a validation error's first problem, for a one-line message."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "the document"
    return f"{where}: {error['msg']}"


@dataclass(frozen=True)
class Problem:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: [{self.rule}] {self.message}"


def _p(rule: str, line: int, key: str | None = None, **kw: object) -> Problem:
    return Problem(rule, line, MSG[key or rule].format(**kw))


def _find_line(lines: list[str], text: str) -> int:
    return next((i for i, ln in enumerate(lines, 1) if ln.strip() == text), 0)


def _chunks(lines: list[str], start: int, stop: int, regex: re.Pattern) -> list[tuple[int, int]]:
    """(first, last) 1-based line ranges of blocks in [start, stop) opened by ``regex``."""
    heads = [i for i in range(start, stop) if regex.match(lines[i - 1])]
    return [(h, (heads[k + 1] if k + 1 < len(heads) else stop) - 1) for k, h in enumerate(heads)]


def check_marker(n: int, marker: Marker, tier: Tier) -> Problem | None:
    """M2–M5 for one impact-begin marker."""
    if not marker.kind:
        return _p("M2", n)
    if marker.kind not in KNOWN_KINDS:
        return _p("M3", n, kind=marker.kind)
    need = REQUIRED_ATTRS.get(marker.kind, ())
    attrs = dict(marker.attrs)
    missing = [a for a in need if a not in attrs]
    if missing:
        return _p("M4", n, kind=marker.kind, attrs=", ".join(missing))
    values = [attrs[a] for a in need]
    nulls = sum(v == "null" for v in values)
    if any(v != "null" and not NUMBER_RE.fullmatch(v) for v in values) or 0 < nulls < len(values):
        return _p("M5", n, kind=marker.kind, got=" ".join(values))
    if marker.kind == "p_item" and tier == Tier.SYSTEM and nulls != len(values):
        return _p("M5", n, "M5s")
    if marker.kind == "p_item" and tier != Tier.SYSTEM and nulls:
        return _p("M5", n, "M5n", tier=tier)
    return None


def _markers(lines: list[str], tier: Tier) -> tuple[list[Problem], dict[int, Marker]]:
    """M1–M5 over the whole file; returns problems and begin markers by line."""
    probs: list[Problem] = []
    found: dict[int, Marker] = {}
    open_at = 0
    for n, line in enumerate(lines, 1):
        if END_RE.match(line):
            if not open_at:
                probs.append(_p("M1", n, "M1x"))
            open_at = 0
        elif BEGIN_RE.match(line):
            if open_at:
                probs.append(_p("M1", open_at))
            open_at = n
            found[n] = Marker.parse(line)
            problem = check_marker(n, found[n], tier)
            if problem:
                probs.append(problem)
    if open_at:
        probs.append(_p("M1", open_at))
    return probs, found


def _data_table(lines: list[str], first: int, last: int) -> tuple[int, int] | None:
    """(header line, last table line) of the pipe table following ``**Data:**``."""
    data = next(
        (n for n in range(first, last + 1)
         if (m := SECTION_RE.match(lines[n - 1])) and m.group("label") == "Data"),
        0,
    )  # fmt: skip
    if not data:
        return None
    n = data + 1
    while n <= last and not lines[n - 1].lstrip().startswith("|"):
        if SECTION_RE.match(lines[n - 1]):
            return None
        n += 1
    if n > last:
        return None
    end = n
    while end + 1 <= last and lines[end].lstrip().startswith("|"):
        end += 1
    return n, end


def _check_table(lines, head, end, scope, ops, cat) -> list[Problem]:
    """F9–F12 for one compute Data table."""
    cols = COMPARATIVE_COLUMNS if scope == "comparative" else STANDALONE_COLUMNS
    header = split_row(lines[head - 1])
    if header[: len(cols)] != cols:
        return [_p("F9", head, cols=list(cols), got=list(header))]
    probs: list[Problem] = []
    for n in range(head + 1, end + 1):
        cells = split_row(lines[n - 1])
        if is_separator(cells):
            continue
        for names, key, rule in CELL_RULES:
            values = (getattr(op, key) for op in ops)
            allowed = {_rendered(v) for v in values if v not in (None, "")}
            for name in (nm for nm in names if nm in header and allowed):
                idx = header.index(name)
                cell = cells[idx] if idx < len(cells) else ""
                if cell and cell != "—" and cell not in allowed:
                    shown = plain_line(cell)
                    probs.append(_p(rule, n, "cell", name=name, field=key, cat=cat, cell=shown))
    return probs


def _rendered(value: object) -> str:
    """A metrics value as its table cell: what drafts.name_cell writes, and how split_row
    reads it back (stripped)."""
    return md_cell_lines(value).strip()


def _check_cards(lines, cards, p_items, tier) -> list[Problem]:
    """F4 and M7 per card."""
    probs: list[Problem] = []
    labels = ("Insight", "Action", "Impact") + (("Confidence",) if tier == Tier.FUSION else ())
    for first, end in cards:
        seen = {m.group("label") for ln in lines[first:end] if (m := FIELD_RE.match(ln))}
        probs.extend(_p("F4", first, label=lb, tier=tier) for lb in labels if lb not in seen)
        count = sum(first < n <= end for n in p_items)
        if count != 1:
            probs.append(_p("M7", first, count=count))
    return probs


def _check_blocks(lines, blocks, markers, tier, scope, metrics) -> list[Problem]:
    """F7, M8 and (compute) F8–F12 per reasoning-candidate block."""
    probs: list[Problem] = []
    metrics = metrics or MetricsCells()
    ops = metrics.operations or []
    cat = plain_line(metrics.category)
    for first, end in blocks:
        cand = Marker("candidate", parse_attrs(CANDIDATE_RE.match(lines[first - 1]).group("body")))
        rank, found = cand.attr("rank") or "?", cand.attr("tier") or ""
        if found.lower() != tier:
            probs.append(_p("F7", first, tier=tier, found=found or "(none)", rank=rank))
        estimate = any(
            n in markers and markers[n].kind == "detail_estimate" for n in range(first, end + 1)
        )
        if not estimate and not any(SENTINEL in ln.lower() for ln in lines[first:end]):
            probs.append(_p("M8", first, rank=rank))
        if tier != Tier.COMPUTE:
            continue
        table = _data_table(lines, first + 1, end)
        if table is None:
            probs.append(_p("F8", first))
        else:
            probs.extend(_check_table(lines, *table, scope, ops, cat))
    return probs


def validate_findings(
    text: str,
    tier: Tier | str,
    *,
    metrics: Mapping | MetricsCells | None = None,
    comparison_scope: str | None = None,
) -> list[Problem]:
    """All problems of a findings file's ``text`` for ``tier`` (empty list ⇒ valid).

    ``metrics`` is the category's ``<cat>_metrics.json`` (compute: relaxed-empty and F10–F12),
    as a document or read as `MetricsCells`; without ``comparison_scope`` the scope is the
    metrics' own (comparative metrics are drafted with the comparative Data table).
    """
    tier = Tier(str(tier).lower())
    metrics, unusable = _metrics_cells(metrics, "the metrics document")
    if comparison_scope is None and metrics is not None:
        comparison_scope = metrics.comparison_scope
    if not text.strip():
        return [_p("F0", 1)]
    lines = text.splitlines()
    last = len(lines)
    probs, markers = _markers(lines, tier)
    probs += unusable
    rec, det = _find_line(lines, REC_HEADING), _find_line(lines, DETAIL_HEADING)
    if not rec:
        probs.append(_p("F1", det or last, h=REC_HEADING, where="before the Detailed Analysis"))
    if not det:
        probs.append(_p("F1", last, h=DETAIL_HEADING, where="after the Recommendations"))
    if rec and det and rec > det:
        probs.append(_p("F2", rec, det=det))
    if not rec or not det or rec > det:
        return sorted(probs, key=lambda p: (p.line, p.rule))
    det_end = next((n for n in range(det + 1, last + 1) if lines[n - 1].startswith("## ")), last)
    status, _ = detect_status(lines[: rec - 1])
    relaxed = tier == Tier.COMPUTE and metrics is not None and metrics.category_findings == []
    declared = status in (Status.NO_FINDINGS, Status.ERROR)
    why = f"Status is {status}" if declared else "metrics category_findings is empty"
    cards = _chunks(lines, rec + 1, det, P_HEADING_RE)
    blocks = _chunks(lines, det + 1, det_end + 1, CANDIDATE_RE)
    p_items = [n for n, m in markers.items() if m.kind == "p_item"]
    if declared or relaxed:
        if cards:
            probs.append(_p("F3", cards[0][0], "F3e", why=why))
        if blocks:
            probs.append(_p("F5", blocks[0][0], "F5e", why=why))
        if p_items:
            probs.append(_p("M6", p_items[0], "M6e", why=why))
    else:
        if not cards:
            probs.append(_p("F3", rec))
        if not blocks:
            probs.append(_p("F5", det))
        if not p_items:
            probs.append(_p("M6", rec))
        if cards and blocks and len(cards) != len(blocks):
            probs.append(_p("F6", det, a=len(cards), b=len(blocks)))
    probs += _check_cards(lines, cards, p_items, tier)
    probs += _check_blocks(lines, blocks, markers, tier, comparison_scope, metrics)
    return sorted(probs, key=lambda p: (p.line, p.rule))


def _metrics_cells(
    metrics: Mapping | MetricsCells | None, source: str
) -> tuple[MetricsCells | None, list[Problem]]:
    """The metrics read as `MetricsCells`, or None and the problem saying why they cannot be."""
    if metrics is None or isinstance(metrics, MetricsCells):
        return metrics, []
    try:
        return MetricsCells.model_validate(metrics), []
    except ValidationError as exc:
        return None, [_unusable(source, exc)]


def _unusable(source: str, exc: ValidationError) -> Problem:
    return Problem("F10", 1, f"{source} cannot be read as metrics ({first_error(exc)}): "
                   "F10-F12 cannot be checked; re-run the category analysis.")  # fmt: skip


def metrics_path_for(path: Path) -> Path:
    """Sibling ``category_data/<stem>_metrics.json`` of ``category_findings/<stem>_findings.md``."""
    stem = path.name.removesuffix(".md").removesuffix("_findings")
    return path.parent.parent / "category_data" / f"{stem}_metrics.json"


def validate_findings_file(
    path: str | Path, tier: Tier | str, comparison_scope: str | None = None
) -> list[Problem]:
    """:func:`validate_findings` on a file, loading the sibling metrics JSON when readable
    (without `comparison_scope`, :func:`validate_findings` takes the scope they declare)."""
    path = Path(path)
    if not path.is_file():
        return [Problem("F0", 1, f"file not found: {path} — write the findings file there.")]
    source = metrics_path_for(path)
    metrics: MetricsCells | None
    unusable: list[Problem] = []
    try:
        metrics = MetricsCells.model_validate_json(source.read_bytes())
    except OSError:  # no metrics file (or none readable): F10-F12 are skipped
        metrics = None
    except ValidationError as exc:
        metrics, unusable = None, [_unusable(source.name, exc)]
    problems = validate_findings(
        path.read_text(encoding="utf-8"), tier, metrics=metrics, comparison_scope=comparison_scope
    )
    return sorted(unusable + problems, key=lambda p: (p.line, p.rule))
