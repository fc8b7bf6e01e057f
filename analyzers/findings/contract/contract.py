"""Typed model of a sub-agent findings markdown file (docs/analysis.md#findings-contract).

A findings file is: free-form preamble (title, ``**Status**`` line, overview prose), then
``## Recommendations`` holding P-item cards, then ``## Detailed Analysis`` holding
reasoning-candidate blocks, then an optional epilogue (e.g. ``## Impact Summary``).

``render_findings`` emits the canonical layout; ``parse_findings`` reads it back so that
``parse_findings(render_findings(x)) == x`` and ``render_findings(parse_findings(t)) == t``
for canonical texts.  Free text is kept verbatim (stripped of surrounding blank lines).

"Nothing to report" (every tier): ``**Status**: NO_FINDINGS`` in the preamble plus empty
``## Recommendations`` and ``## Detailed Analysis`` sections; see :func:`no_findings`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

REC_HEADING = "## Recommendations"
DETAIL_HEADING = "## Detailed Analysis"
NOT_QUANTIFIABLE = "Not quantifiable from trace data"
SYSTEM_IMPACT_SENTENCE = "Impact estimate is not quantifiable from trace data."
# the operations table of a findings file, per scope (drafts write it, validation checks it)
STANDALONE_COLUMNS = (
    "Operation", "Args", "Kernel Path", "Kernel Name", "Time (ms)", "%E2E", "Count",
    "FLOPS/Byte", "Efficiency", "Bound",
)  # fmt: skip
COMPARATIVE_COLUMNS = (
    "Operation", "Args (T1)", "Kernel Path", "Kernel Name", "Trace 1 Time (ms)",
    "Trace 2 Time (ms)", "Count (T1/T2)", "Difference (ms)", "FLOPS/Byte (T1)", "Bound (T1)",
)  # fmt: skip

STATUS_RE = re.compile(
    r"^\s*(?:\*\*Status\*\*\s*:|\*\*Status:\*\*|Status\s*:)\s*\**\s*([A-Za-z_]+)"
)
CARD_RE = re.compile(r"^###\s+(?:(?P<icon>\S+)\s+)?P(?P<num>\d+)\s*:\s*(?P<rest>.*)$")
P_HEADING_RE = re.compile(r"^###\s+.*?P(\d+)\s*:")
FIELD_RE = re.compile(r"^\*\*(?P<label>[^*:]+)\*\*:\s?(?P<value>.*)$")
SECTION_RE = re.compile(r"^\*\*(?P<label>[^*:]+):\*\*\s?(?P<inline>.*)$")
BEGIN_RE = re.compile(r"^\s*<!--\s*impact-begin\b(?P<body>.*?)-->\s*$")
END_RE = re.compile(r"^\s*<!--\s*impact-end\s*-->\s*$")
CANDIDATE_RE = re.compile(r"^\s*<!--\s*reasoning-candidate\b(?P<body>.*?)-->\s*$")
ATTR_RE = re.compile(r"\b(\w+)=([^\s]+)")
SUFFIX_RE = re.compile(r"^(?P<title>.*?)\s+\((?P<suffix>[^()]*)\)$")


class Tier(StrEnum):
    COMPUTE = "compute"
    SYSTEM = "system"
    FUSION = "fusion"


class Status(StrEnum):
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"
    NO_FINDINGS = "NO_FINDINGS"


def detect_status(lines: list[str]) -> tuple[Status | str | None, int]:
    """First status line in plain (``Status: X``) or bold (``**Status**: X``) form.

    Returns ``(status, 1-based line)``; unknown values come back as the raw string,
    a missing line as ``(None, 0)``.
    """
    for i, line in enumerate(lines, 1):
        if line.startswith(("## ", "### ")) and line.strip() == REC_HEADING:
            break
        m = STATUS_RE.match(line)
        if m:
            raw = m.group(1).upper()
            return (Status(raw) if raw in Status.__members__ else raw), i
    return None, 0


def parse_attrs(body: str) -> tuple[tuple[str, str], ...]:
    """``key=value`` pairs of a marker comment, in order (values cannot contain spaces)."""
    return tuple((k, v) for k, v in ATTR_RE.findall(body))


@dataclass(frozen=True)
class Marker:
    """An ``<!-- impact-begin kind=K a=v ... -->`` opening comment."""

    kind: str
    attrs: tuple[tuple[str, str], ...] = ()

    def attr(self, key: str) -> str | None:
        """The attribute as written (the last one when written twice); None without it."""
        return next((v for k, v in reversed(self.attrs) if k == key), None)

    def render(self) -> str:
        parts = [f"kind={self.kind}", *(f"{k}={v}" for k, v in self.attrs)]
        return f"<!-- impact-begin {' '.join(parts)} -->"

    @classmethod
    def parse(cls, line: str) -> Marker | None:
        m = BEGIN_RE.match(line)
        if not m:
            return None
        attrs = parse_attrs(m.group("body"))
        kinds = [v for k, v in attrs if k == "kind"]  # written twice: the later one
        return cls(kinds[-1] if kinds else "", tuple(a for a in attrs if a[0] != "kind"))


@dataclass(frozen=True)
class Table:
    """A markdown pipe table (separator row implied)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = ()

    def render(self) -> str:
        out = [_row(self.header), _row(tuple("---" for _ in self.header))]
        out.extend(_row(r) for r in self.rows)
        return "\n".join(out)


def split_row(line: str) -> tuple[str, ...]:
    """Cells of a pipe-table row; ``\\|`` stays inside a cell."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return tuple(c.strip() for c in re.split(r"(?<!\\)\|", body))


def is_separator(cells: tuple[str, ...]) -> bool:
    return bool(cells) and all(re.fullmatch(r":?-{2,}:?", c) for c in cells)


def _row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |"


def parse_tables(text: str) -> tuple[Table, ...]:
    """All pipe tables in ``text`` (consecutive lines starting with ``|``)."""
    tables: list[Table] = []
    block: list[tuple[str, ...]] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            block.append(split_row(line))
            continue
        if block:
            rows = tuple(r for r in block[1:] if not is_separator(r))
            tables.append(Table(block[0], rows))
            block = []
    return tuple(tables)


@dataclass(frozen=True)
class PItem:
    """One ``### P<N>:`` card under ``## Recommendations``.

    ``suffix`` is the trailing parenthetical: the library (compute tier) or
    ``<time_ms> ms, <instance_count> instances`` (fusion tier). ``icon`` is the fusion
    confidence icon. ``fields`` are ``**Label**: value`` lines before the impact marker.
    """

    number: int
    title: str
    suffix: str | None = None
    icon: str | None = None
    fields: tuple[tuple[str, str], ...] = ()
    impact: Marker | None = None
    impact_text: str | None = None
    trailer: str = ""

    @property
    def library(self) -> str | None:
        return self.suffix

    def field(self, label: str) -> str | None:
        return next((v for k, v in reversed(self.fields) if k == label), None)

    def render(self) -> str:
        head = f"### {self.icon + ' ' if self.icon else ''}P{self.number}: {self.title}"
        out = [head + (f" ({self.suffix})" if self.suffix else "")]
        out.extend(f"**{k}**: {v}" for k, v in self.fields)
        if self.impact is not None:
            out.append(self.impact.render())
        if self.impact_text is not None:
            out.append(f"**Impact**: {self.impact_text}")
        if self.impact is not None:
            out.append("<!-- impact-end -->")
        if self.trailer:
            out.append(self.trailer)
        return "\n".join(out)


@dataclass(frozen=True)
class Section:
    """A ``**Label:** inline`` section of a detailed-analysis block plus following lines."""

    label: str
    inline: str = ""
    body: str = ""

    @property
    def tables(self) -> tuple[Table, ...]:
        return parse_tables(self.body)

    @property
    def marker(self) -> Marker | None:
        for line in self.body.splitlines():
            found = Marker.parse(line)
            if found:
                return found
        return None

    def render(self) -> str:
        head = f"**{self.label}:**" + (f" {self.inline}" if self.inline else "")
        return head + (f"\n{self.body}" if self.body else "")


@dataclass(frozen=True)
class DetailBlock:
    """A ``<!-- reasoning-candidate tier=T rank=R -->`` block with its ``####`` heading."""

    tier: str
    rank: int
    title: str
    lead: str = ""
    sections: tuple[Section, ...] = ()

    def section(self, label: str) -> Section | None:
        return next((s for s in self.sections if s.label == label), None)

    def render(self) -> str:
        out = [f"<!-- reasoning-candidate tier={self.tier} rank={self.rank} -->"]
        out.append(f"#### {self.title}")
        if self.lead:
            out.append(self.lead)
        body = "\n\n".join(s.render() for s in self.sections)
        return "\n".join(out) + (f"\n{body}" if body else "")


@dataclass(frozen=True)
class Findings:
    """A whole findings file; ``status`` is read from the preamble."""

    tier: Tier
    preamble: str = ""
    rec_intro: str = ""
    cards: tuple[PItem, ...] = ()
    detail_intro: str = ""
    details: tuple[DetailBlock, ...] = ()
    epilogue: str = ""

    @property
    def status(self) -> Status | str | None:
        return detect_status(self.preamble.splitlines())[0]

    @property
    def nothing_to_report(self) -> bool:
        return not self.cards and not self.details


def num(value: Any) -> str:
    """A metrics number as text, verbatim (``None`` → ``—``)."""
    return "—" if value is None else str(value)


def no_findings(tier: Tier, title: str, reason: str) -> Findings:
    """The explicit, valid "nothing to report" file for any tier."""
    preamble = f"# {title}\n\n**Status**: {Status.NO_FINDINGS}\n\n{reason}"
    return Findings(tier=tier, preamble=preamble)


def render_findings(findings: Findings) -> str:
    """Canonical markdown for ``findings``."""
    parts: list[str] = []
    if findings.preamble:
        parts.append(findings.preamble)
    parts.append(REC_HEADING)
    if findings.rec_intro:
        parts.append(findings.rec_intro)
    parts.extend(c.render() for c in findings.cards)
    parts.append(DETAIL_HEADING)
    if findings.detail_intro:
        parts.append(findings.detail_intro)
    parts.extend(b.render() for b in findings.details)
    if findings.epilogue:
        parts.append(findings.epilogue)
    return "\n\n".join(parts) + "\n"


def _strip(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n")


def _split_on(lines: list[str], starts) -> tuple[list[str], list[list[str]]]:
    """Split ``lines`` into the text before the first start line and the chunks."""
    head: list[str] = []
    chunks: list[list[str]] = []
    for line in lines:
        if starts(line):
            chunks.append([line])
        elif chunks:
            chunks[-1].append(line)
        else:
            head.append(line)
    return head, chunks


def _parse_card(chunk: list[str]) -> PItem:
    m = CARD_RE.match(chunk[0])
    if m is None:  # ``### Foo P1:`` style headings: keep everything in the title
        num = P_HEADING_RE.match(chunk[0])
        number, icon, rest = int(num.group(1)) if num else 0, None, chunk[0][4:]
    else:
        number, icon, rest = int(m.group("num")), m.group("icon"), m.group("rest")
    sm = SUFFIX_RE.match(rest)
    title, suffix = (sm.group("title"), sm.group("suffix")) if sm else (rest, None)
    fields: list[tuple[str, str]] = []
    impact: Marker | None = None
    impact_text: str | None = None
    i = 1
    while i < len(chunk) and (f := FIELD_RE.match(chunk[i])) and f.group("label") != "Impact":
        fields.append((f.group("label"), f.group("value")))
        i += 1
    if i < len(chunk) and (impact := Marker.parse(chunk[i])) is not None:
        i += 1
    if i < len(chunk) and (f := FIELD_RE.match(chunk[i])) and f.group("label") == "Impact":
        impact_text = f.group("value")
        i += 1
    if impact is not None and i < len(chunk) and END_RE.match(chunk[i]):
        i += 1
    return PItem(number, title, suffix, icon, tuple(fields), impact, impact_text, _strip(chunk[i:]))


def _candidate(line: str) -> tuple[str, str]:
    """(tier, rank) of a ``<!-- reasoning-candidate ... -->`` line, each as written ("" when
    absent; an attribute written twice, its later value)."""
    tier = rank = ""
    for key, value in parse_attrs(CANDIDATE_RE.match(line).group("body")):
        if key == "tier":
            tier = value
        elif key == "rank":
            rank = value
    return tier, rank


def _parse_block(chunk: list[str]) -> DetailBlock:
    tier, rank = _candidate(chunk[0])
    i, title = 1, ""
    if i < len(chunk) and chunk[i].startswith("#### "):
        title, i = chunk[i][5:], i + 1
    lead, raw = _split_on(chunk[i:], SECTION_RE.match)
    sections = []
    for sec in raw:
        sm = SECTION_RE.match(sec[0])
        body = sec[1:]
        while body and not body[-1].strip():
            body.pop()
        sections.append(Section(sm.group("label"), sm.group("inline"), "\n".join(body)))
    return DetailBlock(
        tier, int(rank) if rank.isdigit() else 0, title, _strip(lead), tuple(sections)
    )


def infer_tier(text: str) -> Tier:
    """Tier from the first reasoning-candidate, else fusion-looking cards, else compute."""
    for line in text.splitlines():
        if CANDIDATE_RE.match(line) and (t := _candidate(line)[0].lower()) in set(Tier):
            return Tier(t)
    if re.search(r"^###\s+\S+\s+P\d+\s*:.*instances\)\s*$", text, re.M):
        return Tier.FUSION
    return Tier.COMPUTE


def parse_findings(text: str, tier: Tier | str | None = None) -> Findings:
    """Parse a findings file; ``tier`` defaults to :func:`infer_tier`.

    Raises ``ValueError`` if either required section heading is missing or out of order.
    """
    lines = text.splitlines()
    idx = {
        h: next((i for i, ln in enumerate(lines) if ln.strip() == h), -1)
        for h in (REC_HEADING, DETAIL_HEADING)
    }
    r, d = idx[REC_HEADING], idx[DETAIL_HEADING]
    if r < 0 or d < 0 or d < r:
        raise ValueError(f"need '{REC_HEADING}' followed by '{DETAIL_HEADING}'")
    rec_intro, cards = _split_on(lines[r + 1 : d], lambda ln: bool(P_HEADING_RE.match(ln)))
    rest = lines[d + 1 :]
    end = next((i for i, ln in enumerate(rest) if ln.startswith("## ")), len(rest))
    detail_intro, blocks = _split_on(rest[:end], lambda ln: bool(CANDIDATE_RE.match(ln)))
    return Findings(
        tier=Tier(tier) if tier is not None else infer_tier(text),
        preamble=_strip(lines[:r]),
        rec_intro=_strip(rec_intro),
        cards=tuple(_parse_card(c) for c in cards),
        detail_intro=_strip(detail_intro),
        details=tuple(_parse_block(b) for b in blocks),
        epilogue=_strip(rest[end:]),
    )
