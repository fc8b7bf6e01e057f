r"""Text from a trace or a user's file, rendered so HTML reads it as data: the HTML side of
the one rendering-function family (`markdown_text.py` is the Markdown side;
docs/analysis.md#trace-text-in-markdown).

* `html_text` is the only way a string reaches `analysis.html`: cleaned to one visible line
  by `markdown_text.plain_line` (control and format characters made visible, length capped),
  then every character HTML gives a meaning to (`& < > " '`) written as an entity, so it is
  text in an element and in a quoted attribute alike.
* `html_inline` takes one line of Markdown rooflens composed (a card's field, a title: names
  in it are `md_code` spans) and writes it as HTML: the whole line escaped first, then its
  code spans shown as `<code>`, `**bold**` as `<strong>` and a Markdown backslash escape
  (`\[`, `\<`, what `md_prose` writes) as the character itself. Nothing the line holds can open
  a tag: the only tags are the ones added here, around text already escaped.

Nothing here imports more than the standard library, like its Markdown sibling.
"""

from __future__ import annotations

import html
import re

from .markdown_text import DEFAULT_LIMIT, plain_line

_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_BR = re.compile(r"&lt;br&gt;")
# a Markdown backslash escape (any ASCII punctuation; `< > & " '` are entities by now)
_ESCAPE = re.compile(r"\\(&lt;|&gt;|&amp;|&quot;|&#x27;|[!-/:-@\[-`{-~])")


def html_text(value: object, limit: int | None = DEFAULT_LIMIT) -> str:
    """`value` as HTML text (element content or a quoted attribute value): one line, capped
    at `limit` characters, every markup character an entity."""
    return html.escape(plain_line(value, limit), quote=True)


def html_inline(markdown: str, limit: int | None = None) -> str:
    """One line of rooflens's Markdown as HTML (see the module docstring)."""
    escaped = html_text(markdown, limit)
    parts: list[str] = []
    pos = 0
    for span in _CODE_SPAN.finditer(escaped):
        parts.append(_emphasis(escaped[pos : span.start()]))
        inner = span.group(2)
        if inner.startswith(" ") and inner.endswith(" ") and inner.strip(" "):
            inner = inner[1:-1]  # the padding md_code adds around a backtick at an edge
        parts.append(f"<code>{inner}</code>")
        pos = span.end()
    parts.append(_emphasis(escaped[pos:]))
    return "".join(parts)


def _emphasis(text: str) -> str:
    """Bold and line breaks outside the Markdown escapes; an escaped character as itself."""
    parts, pos = [], 0
    for escape in _ESCAPE.finditer(text):
        parts += [_bold(text[pos : escape.start()]), escape.group(1)]
        pos = escape.end()
    parts.append(_bold(text[pos:]))
    return "".join(parts)


def _bold(text: str) -> str:
    return _BR.sub("<br>", _BOLD.sub(r"<strong>\1</strong>", text))
