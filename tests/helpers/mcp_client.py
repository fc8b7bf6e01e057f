"""Calling a tool through an MCP client: its structured result, or the text of its error."""

from __future__ import annotations

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
