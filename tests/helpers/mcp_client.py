"""Calling a tool through an MCP client: its structured result, or the text of its error."""

from __future__ import annotations

import re

from mcp import Client


def text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def call(client: Client, name: str, args: dict) -> dict:
    result = await client.call_tool(name, args)
    assert not result.is_error, text(result)
    return result.structured_content


async def error_of(client: Client, name: str, args: dict) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, result.structured_content
    return text(result)


SECTION_LINK = re.compile(r"^- `(rooflens://\S+\?section=[a-z0-9-]+)`: ", re.MULTILINE)
PAGE_TRAILER = re.compile(r"\n\*\(lines \d+-\d+ of \d+; next page: `(\S+)`\)\*\n$")
INDEX_START = "*(This report is "


async def read_text(client: Client, uri: str) -> str:
    return (await client.read_resource(uri)).contents[0].text


async def whole_report(client: Client, uri: str) -> str:
    """A run's analysis.md as served by `uri`, put back together when it came a section at a
    time (the index's sections read in order, each long one page by page)."""
    first = await read_text(client, uri)
    if INDEX_START not in first:
        return first
    text = first[: first.index(INDEX_START)]
    for link in SECTION_LINK.findall(first):
        page = await read_text(client, link)
        while found := PAGE_TRAILER.search(page):
            text += page[: found.start()]
            page = await read_text(client, found.group(1))
        text += page
    return text
