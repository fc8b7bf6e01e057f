"""Text from a trace or a user's file, rendered so Markdown reads it as data
(docs/analysis.md#trace-text-in-markdown).

Operator, kernel, module, frame, category and platform names come from files rooflens does
not write: a name may hold a newline and a heading, an impact marker, a table row, HTML or a
link. Every such string goes into Markdown through `md_code` (or `md_cell` in a table): one
CommonMark code span, so nothing in it is markup, on one line, of bounded length.

* Line breaks and tabs (`\\n`, `\\r`, `\\t`, `\\v`, `\\f`, U+0085, U+2028, U+2029) become a
  space; every other control or format character (C0, C1, DEL, bidi embeddings, overrides and
  isolates, zero-width characters, BOM, soft hyphen) and lone surrogates become a visible
  `\\uXXXX` escape, so what the reader sees is what the bytes say.
* Text longer than the limit (`DEFAULT_LIMIT` characters unless the caller asks for more)
  keeps its first `limit - 1` characters and ends with `…`.
* Backticks stay: the span's fence is one backtick longer than the longest run inside, with a
  space of padding when the text starts or ends with a backtick or a space (CommonMark strips
  one space from each side of such content, so the text reads back unchanged). A span never
  opens a fenced code block, even at the start of a line: its closing fence puts backticks in
  what would be the info string.
* In a table cell `|` is escaped as `\\|`: GFM splits a row on `|` even inside a code span,
  and removes the backslash again, so the cell shows the name as it is.

`plain_line` is the same cleaning without the span, for one-line plain-text output;
`md_prose` keeps a sentence rooflens did not compose alone inert without a span;
`md_table_cell` puts Markdown rooflens composed (names already spans) in a table cell;
`without_code_spans` is what of a line renders as markup (for validators and tests). Nothing
here imports more than the standard library, so every stage and face can use it.
"""

from __future__ import annotations

import re
import unicodedata

DEFAULT_LIMIT = 120
ELLIPSIS = "…"
BR = "<br>"  # the line break rooflens writes between the parts of a table cell
_SPACES = frozenset("\n\r\t\v\f\x85\u2028\u2029")
_HIDDEN = frozenset(("Cc", "Cf", "Cs", "Zl", "Zp"))
_BACKTICKS = re.compile(r"`+")


def _clean_char(ch: str) -> str:
    if ch in _SPACES:
        return " "
    if unicodedata.category(ch) in _HIDDEN:
        code = ord(ch)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
    return ch


def plain_line(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """`value` as one line of visible text: line breaks and tabs become spaces, other
    control and format characters a `\\uXXXX` escape; capped at `limit` characters with `…`
    (None: no cap)."""
    text = "" if value is None else str(value)
    if text.isprintable() and text.isascii():
        cleaned = text
    else:
        cleaned = "".join(ch if ch.isprintable() else _clean_char(ch) for ch in text)
    if limit is not None and len(cleaned) > limit:
        cleaned = cleaned[: max(limit - 1, 0)] + ELLIPSIS
    return cleaned


def md_code(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """`value` as one CommonMark code span (see the module docstring): safe anywhere in a
    line of Markdown outside a table."""
    return _span(plain_line(value, limit))


def md_cell(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """`md_code` for a GFM table cell: `|` escaped, so the row keeps its columns."""
    return _span(plain_line(value, limit)).replace("|", "\\|")


def md_cell_lines(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """A table cell whose parts rooflens joined with `<br>` (the shapes of an op's inputs,
    its kernels): each part its own code span, the `<br>` kept as the line break."""
    return BR.join(md_cell(part, limit) for part in str(value).split(BR))


def md_table_cell(markdown: str) -> str:
    """Markdown rooflens composed (its own words, every name already an `md_code` span) as a
    GFM table cell: `|` escaped, inside the spans too (GFM removes the backslash there)."""
    return markdown.replace("|", "\\|")


_PROSE_SPECIALS = re.compile(r"([\\<>\[\]&|])")


def md_prose(value: object, limit: int | None = None) -> str:
    """A sentence rooflens did not compose alone (a health warning, an error or a perf
    model's reason that may quote a name or a path): one line, with every character that
    could open HTML, an autolink, a link, an image, an entity or a table cell
    backslash-escaped (emphasis is left alone: it can only restyle words). Backticks stay, so
    the message's own code spans still render. Prefer `md_code` for the name itself wherever
    the sentence is built."""
    return _PROSE_SPECIALS.sub(r"\\\1", plain_line(value, limit))


def without_code_spans(line: str) -> str:
    """One line of Markdown with each code span replaced by a space: what is left is what
    renders as markup (validators look for placeholders there, not inside names). A backtick
    run with no closing run of the same length is literal text, as in CommonMark."""
    runs = list(_BACKTICKS.finditer(line))
    out, pos, k = [], 0, 0
    while k < len(runs):
        opener = runs[k]
        close = next((j for j in range(k + 1, len(runs))
                      if len(runs[j].group()) == len(opener.group())), None)  # fmt: skip
        if close is None:
            k += 1
            continue
        out.append(line[pos : opener.start()] + " ")
        pos, k = runs[close].end(), close + 1
    return "".join(out) + line[pos:]


def _span(text: str) -> str:
    if not text:
        return "` `"
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    edges = text[0] + text[-1]
    pad = " " if "`" in edges or (" " in edges and text.strip(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"
