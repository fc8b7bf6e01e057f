"""Where trace text landed in a Markdown file rooflens wrote, read with a CommonMark parser
(markdown-it-py, GFM tables on): text inside a code span is data; anywhere else (plain text,
HTML, a link or image target, a code block) it would be read as part of the report."""

from __future__ import annotations

from collections.abc import Iterable

from markdown_it import MarkdownIt
from markdown_it.token import Token

PARSER = MarkdownIt("commonmark").enable("table")
ACTIVE = ("<script", "javascript:", "onerror")  # markup that must never render as such


def _outside_spans(tokens: Iterable[Token]) -> Iterable[tuple[str, str]]:
    """(token type, text) of everything that renders as other than a code span."""
    for token in tokens:
        if token.type in ("html_block", "fence", "code_block"):
            yield token.type, token.content
        for child in token.children or ():
            if child.type == "code_inline":
                continue
            if child.type in ("text", "html_inline"):
                yield child.type, child.content
            for attr in ("href", "src"):
                if child.attrGet(attr) is not None:
                    yield f"{child.type}.{attr}", str(child.attrGet(attr))


def leaks(markdown: str, markers: Iterable[str]) -> list[tuple[str, str]]:
    """(where, text) of every piece of `markdown` outside a code span that holds one of
    `markers` (case-insensitive) or active markup."""
    wanted = [m.lower() for m in (*markers, *ACTIVE)]
    return [
        (kind, text)
        for kind, text in _outside_spans(PARSER.parse(markdown))
        if any(m in text.lower() for m in wanted)
    ]


def headings(markdown: str) -> list[tuple[int, str]]:
    """(level, text) of every heading, in order."""
    tokens = PARSER.parse(markdown)
    return [
        (int(t.tag[1]), tokens[i + 1].content)
        for i, t in enumerate(tokens)
        if t.type == "heading_open"
    ]
