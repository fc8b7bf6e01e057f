"""Trace text rendered into Markdown is one inert code span (analyzers/markdown_text.py):
checked against a CommonMark parser with GFM tables (markdown-it-py), for hand-picked hostile
names and, as properties, for any text."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from rooflens.analyzers.markdown_text import (
    DEFAULT_LIMIT,
    ELLIPSIS,
    md_cell,
    md_cell_lines,
    md_code,
    md_prose,
    md_table_cell,
    plain_line,
    without_code_spans,
)

PARSER = MarkdownIt("commonmark").enable("table")
HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def inline_children(markdown: str) -> list:
    tokens = PARSER.parse(markdown)
    return [c for t in tokens if t.type == "inline" for c in t.children or []]


def parsed_span(markdown: str) -> str:
    """The content of the one code span `markdown` (a paragraph) must be."""
    tokens = PARSER.parse(markdown)
    assert [t.type for t in tokens] == ["paragraph_open", "inline", "paragraph_close"], markdown
    children = inline_children(markdown)
    assert [c.type for c in children] == ["code_inline"], markdown
    return children[0].content


def parsed_cell(cell: str) -> str:
    """The content of a one-column table's only body cell, which must be one code span."""
    tokens = PARSER.parse(f"| h | g |\n| --- | --- |\n| {cell} | x |\n")
    cells = [t for t in tokens if t.type == "inline"]
    assert len(cells) == 4, cell  # the row kept its two columns
    kinds = [c.type for c in cells[2].children]
    assert kinds == ["code_inline"], (cell, kinds)
    return cells[2].children[0].content


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("x\n### 🔴 P1: forged\n", "x ### 🔴 P1: forged "),
        (
            "\n<!-- impact-begin kind=p_item low=1 mid=1 high=1 -->",
            " <!-- impact-begin kind=p_item low=1 mid=1 high=1 -->",
        ),
        ("<script>alert(1)</script>", "<script>alert(1)</script>"),
        ("[x](javascript:alert(1))", "[x](javascript:alert(1))"),
        ("a`b``c", "a`b``c"),
        ("`edge`", "`edge`"),
        ("\u202eabc\u2066d\u2069\u200b\ufeff", "\\u202eabc\\u2066d\\u2069\\u200b\\ufeff"),
        ("\x1b[31mred\x07\x7f\x85", "\\x1b[31mred\\x07\\x7f "),
        ("tab\there\r\nline\u2028sep", "tab here  line sep"),
        (" lead and trail ", " lead and trail "),
        ("   ", "   "),
        ("", " "),  # an empty name is a span of one space
    ],
)
def test_hostile_names_read_back_as_one_code_span(text, shown):
    rendered = md_code(text)
    assert "\n" not in rendered and rendered.startswith("`") and rendered.endswith("`")
    assert parsed_span(rendered) == shown
    assert parsed_cell(md_cell(text)) == shown


def test_the_fence_outgrows_the_longest_backtick_run():
    assert md_code("a``b") == "```a``b```"
    assert md_code("`x") == "`` `x ``"
    assert md_code("```") == "```` ``` ````"


def test_a_pipe_is_escaped_only_in_a_cell():
    assert md_code("a|b") == "`a|b`"
    assert md_cell("a|b") == "`a\\|b`"
    assert md_cell("a\\|b") == "`a\\\\|b`"  # a backslash before a pipe stays visible
    assert parsed_cell(md_cell("a\\|b")) == "a\\|b"


def test_long_text_is_capped_with_an_ellipsis():
    text = "k" * 500
    assert plain_line(text) == "k" * (DEFAULT_LIMIT - 1) + ELLIPSIS
    assert md_code(text) == f"`{'k' * (DEFAULT_LIMIT - 1)}{ELLIPSIS}`"
    assert md_code(text, limit=300) == f"`{'k' * 299}{ELLIPSIS}`"
    assert md_code(text, limit=None) == f"`{text}`"
    assert plain_line("short") == "short"


def test_cell_parts_keep_the_line_breaks_rooflens_wrote():
    cell = md_cell_lines("(4,512) bf16<br>(2|2) x\n# h")
    assert cell == "`(4,512) bf16`<br>`(2\\|2) x # h`"
    kinds = [c.type for c in inline_children(f"| h |\n| --- |\n| {cell} |\n")]
    assert kinds == ["text", "code_inline", "html_inline", "code_inline"]  # header, then the row


def test_a_span_at_the_start_of_a_line_opens_no_block():
    for text in ("``` python", "# heading", "- item", "1. one", "> quote", "<div>", "---"):
        assert parsed_span(md_code(text)) == text


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400), st.one_of(st.none(), st.integers(min_value=1, max_value=200)))
def test_any_text_is_one_bounded_inert_span(text, limit):
    rendered = md_code(text, limit=limit)
    cap = 10 * len(text) if limit is None else limit  # an escape is at most 10 characters
    assert rendered.startswith("`") and rendered.endswith("`")
    assert not any(unicodedata.category(c) in HIDDEN for c in rendered)
    assert len(rendered) <= 3 * max(cap, 1) + 4
    assert parsed_span(rendered) == (plain_line(text, limit) or " ")
    assert parsed_cell(md_cell(text, limit=limit)) == (plain_line(text, limit) or " ")


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(categories=["L", "N", "P", "S"]), min_size=1, max_size=DEFAULT_LIMIT))
def test_short_clean_text_reads_back_unchanged(text):
    assert plain_line(text) == text
    assert parsed_span(md_code(text)) == text


def test_prose_that_may_quote_a_name_stays_inert_and_keeps_its_own_spans():
    text = "GPU `x` (<img src=x onerror=alert(1)>) [a](javascript:b) &amp; a|b\n# h"
    rendered = md_prose(text)
    assert "\n" not in rendered
    children = inline_children(rendered)
    assert [c.type for c in children if c.type != "text"] == ["code_inline"]
    shown = "".join(c.content for c in children if c.type == "text")
    assert "<img src=x onerror=alert(1)>" in shown and "[a](javascript:b)" in shown
    assert "&amp;" in shown and "a|b # h" in shown


def test_composed_markdown_in_a_cell_and_what_renders_as_markup():
    title = f"Fuse {md_code('a|b')} (3 kernels)"
    assert parsed_cell(md_table_cell(md_code("a|b"))) == "a|b"
    assert md_table_cell(title) == "Fuse `a\\|b` (3 kernels)"
    assert without_code_spans("x `<Model>` y ``a`b`` <Platform> ` z") == "x   y   <Platform> ` z"
