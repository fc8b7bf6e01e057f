"""`analysis.html`: the report as one page (docs/analysis.md#the-page), from the same typed
data `analysis.md` is composed from (`ReportInputs`, the placed cards, the plot's PNG), never
from the Markdown file.

One self-contained file: the plot embedded as a base64 PNG, the styles and the one small
script inline, no URL to fetch. The script sorts a table when its header is clicked; a
Content-Security-Policy lets no other script run and nothing load but the embedded image.
Every string from the trace or a user's file goes through `html_text` (or `html_inline` for
rooflens's own Markdown lines, whose names are code spans): analyzers/html_text.py.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence

from ...html_text import html_inline, html_text
from ..contract.contract import Table, parse_tables
from ..drafting.submission import SET_ASIDE, analyst_overview
from ..ranking.impact_scale import PriorityItem
from .cards import Placed, impact_text, ms, placed_cards, us, where_text
from .compose import INSIGHTS, report_title
from .html_timeline import strips
from .summary import ReportInputs

SCRIPT = """
document.querySelectorAll("table.sortable th").forEach(function (th) {
  function sort() {
    var table = th.closest("table"), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var up = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    function key(row) {
      var cell = row.cells[col], v = cell.getAttribute("data-v");
      if (v === null) { v = cell.textContent.trim().toLowerCase(); }
      var n = Number(v.replace(/,/g, ""));
      return v !== "" && !isNaN(n) ? n : v;
    }
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (typeof x !== typeof y) { x = String(x); y = String(y); }
      return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  th.addEventListener("click", sort);
  th.addEventListener("keydown", function (e) { if (e.key === "Enter") { sort(); } });
});
"""

STYLE = """
:root { --ink: #1f2933; --muted: #616e7c; --line: #d9e2ec; --accent: #1d4ed8; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: #f5f7fa; }
header { background: #102a43; color: #fff; padding: 20px 32px; }
header h1 { margin: 0; font-size: 22px; }
header p { margin: 4px 0 0; color: #bcccdc; }
header code { background: rgba(255, 255, 255, 0.16); color: #fff; }
nav { padding: 8px 32px; background: #fff; border-bottom: 1px solid var(--line); }
nav a { margin-right: 18px; color: var(--accent); text-decoration: none; }
main { max-width: 1120px; margin: 0 auto; padding: 16px 32px 48px; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 16px 20px; margin: 16px 0; }
h2 { margin: 0 0 12px; font-size: 18px; }
h3 { margin: 0 0 8px; font-size: 16px; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px; }
.tile { border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.tile b { display: block; font-size: 20px; }
.tile span { color: var(--muted); font-size: 13px; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
td.n, th.n { text-align: right; white-space: nowrap; }
table.sortable th { cursor: pointer; user-select: none; background: #f0f4f8; }
table.sortable th::after { content: " \\2195"; color: #9aa5b1; }
table.sortable th[aria-sort=ascending]::after { content: " \\2191"; color: var(--ink); }
table.sortable th[aria-sort=descending]::after { content: " \\2193"; color: var(--ink); }
code { font: 13px ui-monospace, SFMono-Regular, Menlo, monospace; background: #f0f4f8;
  padding: 1px 4px; border-radius: 4px; overflow-wrap: anywhere; }
figure { margin: 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
.strip-box { margin: 10px 0; }
.strip { width: 100%; height: auto; display: block; }
.strip .lbl { font: 11px system-ui, sans-serif; fill: var(--muted); }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin-top: 8px; font-size: 13px; }
.legend .key svg { vertical-align: -1px; margin-right: 5px; }
.note { color: var(--muted); font-size: 13px; }
.card { border-left: 5px solid #2471a3; }
.card.p1 { border-left-color: #c0392b; } .card.p2 { border-left-color: #d68910; }
.card dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px; margin: 0; }
.card dt { font-weight: 600; } .card dd { margin: 0; }
.detail { margin-top: 10px; border-top: 1px dashed var(--line); padding-top: 8px; }
.warn li { margin: 4px 0; }
.wide { overflow-x: auto; } .detail table { font-size: 13px; }
a.back { font-size: 13px; color: var(--accent); }
"""


CLASS_N = " class='n'"


def _hash(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


CSP = (
    "default-src 'none'; img-src data:; "
    f"style-src 'sha256-{_hash(STYLE)}'; script-src 'sha256-{_hash(SCRIPT)}'; "
    "base-uri 'none'; form-action 'none'"
)


def report_page(run: ReportInputs, png: bytes | None) -> str:
    """The whole page (see the module docstring)."""
    items = run.priorities.priorities
    placed = placed_cards(items, run.findings, run.metrics)
    idle = run.analysed.cpu_idle
    host = idle.host_side if idle is not None else None
    title = report_title(run).removeprefix("# ")
    body = [
        f"<header><h1>{html_inline(title)}</h1><p>rooflens report: the same numbers as "
        "<code>analysis.md</code>; the trace with these findings is "
        "<code>annotated_trace.json.gz</code> (open it in ui.perfetto.dev).</p></header>",
        "<nav><a href='#summary'>Summary</a><a href='#priorities'>Priorities</a>"
        "<a href='#plot'>Plot</a><a href='#timeline'>Timeline</a>"
        "<a href='#categories'>Categories</a><a href='#details'>Details</a></nav>",
        "<main>",
        _summary(run),
        _priorities(items),
        _judgement(run, placed),
        _plot(png),
        _timeline(strips(host, items)),
        _categories(run),
        _warnings(run),
        _details(placed),
        "</main>",
    ]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html_text(title)}</title><style>{STYLE}</style></head><body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{SCRIPT}</script></body></html>\n"
    )


def _summary(run: ReportInputs) -> str:
    u = run.util
    busy = 100 - u.idle_time_percent
    tiles = [
        (f"{u.total_time_ms:,.1f} ms", "analysed window"),
        (f"{busy:.1f} %", "GPU busy"),
        (f"{u.idle_time_percent:.1f} %", "GPU idle"),
    ]
    its = run.iterations()
    if its is not None:
        tiles.append((f"{its.count}", f"iterations, median {its.median_ms:,.1f} ms"))
    totals = run.priorities.saving_totals
    if totals is not None and run.priorities.priorities:
        tiles.append((f"{totals.mid_ms:,.1f} ms", f"could be saved ({totals.percent_mid:.1f} %)"))
    cells = "".join(f"<div class='tile'><b>{html_text(v)}</b><span>{html_text(k)}</span></div>"
                    for v, k in tiles)  # fmt: skip
    prose = run.prose.summary if run.prose is not None else None
    said = f"<p>{html_inline(prose)}</p>" if prose else ""
    why = run.priorities.nothing_to_rank
    said += f"<p class='note'>{html_text(why, None)}</p>" if why else ""
    return f"<section id='summary'><h2>Summary</h2><div class='tiles'>{cells}</div>{said}</section>"


def _priorities(items: Sequence[PriorityItem]) -> str:
    if not items:
        return "<section id='priorities'><h2>Priorities</h2><p>No finding is ranked.</p></section>"
    head = _head(
        ("P", "n"), ("Finding", ""), ("Kind", ""), ("Saving, mid (ms)", "n"),
        ("% of window", "n"), ("Range (ms)", "n"), ("Where in the trace (µs)", ""),
    )  # fmt: skip
    rows = []
    for i in items:
        s = i.saving
        where, first = "—", ""
        if i.time_ranges is not None:
            r = i.time_ranges
            where = f"{r.count} × from {us(r.first_us)} to {us(r.last_us)}"
            first = f"{r.first_us:.3f}"
        cells = [
            _td(f"<a href='#p{i.p_number}'>P{i.p_number}</a>", i.p_number, raw=True),
            _td(html_inline(i.title), raw=True),
            _td(f"{i.kind} · {i.category}"),
            _td(ms(s.mid_ms) if s else "—", s.mid_ms if s else -1),
            _td(f"{i.percent_mid:.2f}" if i.percent_mid is not None else "—", i.percent_mid or -1),
            _td(f"{ms(s.low_ms, s.high_ms)}–{ms(s.high_ms)}" if s else "—", s.high_ms if s else -1),
            _td(where, first or None),
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    table = (
        f"<table class='sortable' id='priority-table'>{head}<tbody>{''.join(rows)}</tbody></table>"
    )
    return (
        "<section id='priorities'><h2>Priorities</h2><p class='note'>Every finding on one "
        "scale: what fixing it could save of the analysed window. Click a header to sort; "
        f"click a P-number for its detail.</p>{table}</section>"
    )


def _judgement(run: ReportInputs, placed: Sequence[Placed]) -> str:
    """The analysts' overviews and the items they set aside, as the Markdown report has them
    (judgement.py); absent when no analyst wrote either."""
    said = [
        f"<li><code>{html_text(key)}</code>: {html_inline(text)}</li>"
        for key, found in run.findings.items()
        if (text := analyst_overview(found))
    ]
    aside = [
        f"<li><a href='#p{p.number}'>P{p.number}</a> (<code>{html_text(p.key)}</code>): "
        f"{html_inline(reason)}</li>"
        for p in placed
        if (reason := p.card.field(SET_ASIDE)) is not None
    ]
    if not said and not aside:
        return ""
    parts = ["<section id='judgement'><h2>What the analysts said</h2>"]
    if said:
        parts.append(f"<ul>{''.join(said)}</ul>")
    if aside:
        parts.append(
            "<p class='note'>Set aside by the analysts (still ranked with code's numbers; "
            f"the cards say why):</p><ul>{''.join(aside)}</ul>"
        )
    return "".join(parts) + "</section>"


def _plot(png: bytes | None) -> str:
    if png is None:
        return "<section id='plot'><h2>Plot</h2><p>No plot was drawn for this run.</p></section>"
    data = base64.b64encode(png).decode("ascii")
    return (
        "<section id='plot'><h2>Where the time goes and what fixing it could save</h2>"
        f"<figure><img id='plot-image' alt='Performance breakdown' src='data:image/png;base64,"
        f"{data}'></figure></section>"
    )


def _timeline(drawn: str) -> str:
    if not drawn:
        return (
            "<section id='timeline'><h2>Timeline</h2><p>No finding of this run has time "
            "ranges to draw.</p></section>"
        )
    return (
        "<section id='timeline'><h2>Timeline, iteration by iteration</h2><p class='note'>"
        "The GPU's busy time, its idle gaps by cause, and where each P-item's time falls."
        f"</p>{drawn}</section>"
    )


def _categories(run: ReportInputs) -> str:
    head = _head(("Category", ""), ("Tier", ""), ("Operations", "n"), ("Kernel time (ms)", "n"))
    rows = []
    for c in run.manifest.categories:
        t = c.gpu_kernel_time_ms
        cells = [
            _td(html_inline(f"`{c.display_name or c.name}`"), raw=True),
            _td(c.tier),
            _td(str(c.ops_count), c.ops_count),
            _td(f"{t:,.3f}" if t is not None else "—", t if t is not None else -1),
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        "<section id='categories'><h2>Categories</h2>"
        f"<table class='sortable' id='category-table'>{head}<tbody>{''.join(rows)}</tbody>"
        "</table></section>"
    )


def _warnings(run: ReportInputs) -> str:
    found = list(run.health or ())
    if not found:
        return ""
    lines = "".join(f"<li>{html_text(w.message, None)}</li>" for w in found)
    return (
        "<section id='warnings'><h2>What this trace could not show</h2>"
        f"<ul class='warn'>{lines}</ul></section>"
    )


def _details(placed: Sequence[Placed]) -> str:
    if not placed:
        return "<section id='details'><h2>Details</h2><p>No items.</p></section>"
    order = {t: k for k, t in enumerate(INSIGHTS)}
    cards = [_card(p) for p in sorted(placed, key=lambda p: (p.number, order.get(p.tier, 9)))]
    return f"<div id='details'>{''.join(cards)}</div>"


def _card(p: Placed) -> str:
    card, n = p.card, p.number
    title = html_inline(card.title) + (
        f" ({html_inline(card.suffix)})" if card.suffix and p.tier != "system" else ""
    )
    fields = [(k, html_inline(v)) for k, v in card.fields]
    fields.append(("Impact", html_inline(impact_text(p))))
    if p.item is not None and p.item.time_ranges is not None:
        where = where_text(p.item.time_ranges).removeprefix("Where in the trace: ")
        fields.append(("Where", html_text(where, None)))
    listed = "".join(f"<dt>{html_text(k)}</dt><dd>{v}</dd>" for k, v in fields)
    detail = _block(p)
    rank = f" p{n}" if n <= 2 else ""
    return (
        f"<section class='card{rank}' id='p{n}'><h3>P{n}: {title}</h3>"
        f"<p class='note'>{html_text(INSIGHTS.get(p.tier, p.tier))}</p><dl>{listed}</dl>"
        f"{detail}<a class='back' href='#priorities'>↑ back to the priorities</a></section>"
    )


def _block(p: Placed) -> str:
    """The Detailed Analysis block's sections (the estimate is the card's Impact)."""
    out = []
    if p.block.lead:
        out.append(_lines(p.block.lead))
    for section in p.block.sections:
        if section.label == "Impact estimate":
            continue
        inline = f" {html_inline(section.inline)}" if section.inline else ""
        out.append(f"<p><strong>{html_text(section.label)}:</strong>{inline}</p>")
        if section.body:
            out.append(_lines(section.body))
    return f"<div class='detail'>{''.join(out)}</div>" if out else ""


def _lines(text: str) -> str:
    """A block's Markdown lines: its tables as tables, its list items as a list, markers
    (HTML comments) left out."""
    out: list[str] = []
    items: list[str] = []
    table: list[str] = []

    def flush() -> None:
        if items:
            out.append("<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>")
            items.clear()
        if table:
            out.extend(_table(t) for t in parse_tables("\n".join(table)))
            table.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|"):
            if items:
                flush()
            table.append(stripped)
            continue
        if table:
            flush()
        if not stripped or stripped.startswith("<!--"):
            continue
        if stripped.startswith(("- ", "* ")):
            items.append(html_inline(stripped[2:]))
        else:
            flush()
            out.append(f"<p>{html_inline(stripped)}</p>")
    flush()
    return "".join(out)


def _table(t: Table) -> str:
    head = "".join(f"<th>{html_inline(_cell(c))}</th>" for c in t.header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html_inline(_cell(c))}</td>" for c in row) + "</tr>"
        for row in t.rows
    )
    table = f"<table class='sortable'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    return f"<div class='wide'>{table}</div>"


def _cell(text: str) -> str:
    return text.replace("\\|", "|")


def _head(*columns: tuple[str, str]) -> str:
    cells = "".join(
        f"<th tabindex='0' class='{cls}'>{html_text(name)}</th>" for name, cls in columns
    )
    return f"<thead><tr>{cells}</tr></thead>"


def _td(text: str, value: object = None, *, raw: bool = False) -> str:
    shown = text if raw else html_text(text, None)
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    attr = f" data-v='{html_text(value)}'" if value is not None else ""
    return f"<td{CLASS_N if numeric else ''}{attr}>{shown}</td>"
