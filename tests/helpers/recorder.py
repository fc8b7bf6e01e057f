"""A scripted model: an MCP client that records every tool call, resource read and prompt it
makes, and the size of the largest result (tests/server/test_*_client.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp import Client


@dataclass
class Recorder:
    """Counts and sizes every request the scripted model makes."""

    client: Client
    tool_calls: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)
    largest: int = 0

    async def tool(self, name: str, **args: Any) -> dict[str, Any]:
        self.tool_calls.append(name)
        result = await self.client.call_tool(name, args)
        self.largest = max(self.largest, len(result.model_dump_json(by_alias=True)))
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, f"{name}({args}): {text}"
        return result.structured_content

    async def read(self, uri: str) -> str:
        self.reads.append(uri)
        return (await self.client.read_resource(uri)).contents[0].text

    async def prompt(self, name: str, **args: str) -> str:
        self.prompts.append(name)
        return (await self.client.get_prompt(name, args)).messages[0].content.text
