"""`html_text` and `html_inline` (analyzers/html_text.py): trace text is HTML text, never
markup; rooflens's own Markdown line keeps its code spans and bold as tags around escaped
text."""

from __future__ import annotations

import pytest

from rooflens.analyzers.html_text import html_inline, html_text
from rooflens.analyzers.markdown_text import md_code


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"),
        ('<img src=x onerror="a()">', "&lt;img src=x onerror=&quot;a()&quot;&gt;"),
        ("it's & <b>", "it&#x27;s &amp; &lt;b&gt;"),
        ("two\nlines\u202e", "two lines\\u202e"),  # one line; a bidi override made visible
        (None, ""),
    ],
)
def test_html_text_escapes_every_markup_character(value, shown) -> None:
    assert html_text(value) == shown


def test_html_text_caps_the_length_like_its_markdown_sibling() -> None:
    assert html_text("x" * 200, 10) == "x" * 9 + "…"


def test_html_inline_shows_code_spans_and_bold_around_escaped_text() -> None:
    name = "<script>alert(1)</script>"
    line = f"**Insight**: {md_code(name)} runs `x`y` & <b>"
    assert html_inline(line) == (
        "<strong>Insight</strong>: <code>&lt;script&gt;alert(1)&lt;/script&gt;</code> runs "
        "<code>x</code>y` &amp; &lt;b&gt;"
    )
    fenced = md_code("a`b")  # a longer fence around a backtick
    assert html_inline(fenced) == "<code>a`b</code>"
    assert html_inline(md_code("`edge")) == "<code>`edge</code>"


def test_a_markdown_escape_reads_as_its_character_and_stays_inert() -> None:
    """An analyst's note is stored as inert Markdown (`md_prose`: `\\<`, `\\[`, `\\*`); the page
    shows the characters, still as text."""
    line = r"the \<b\>adds\</b\> \[link\](x) \*\*not bold\*\* and **bold** `a\<b`"
    assert html_inline(line) == (
        "the &lt;b&gt;adds&lt;/b&gt; [link](x) **not bold** and <strong>bold</strong> "
        "<code>a\\&lt;b</code>"
    )
