"""The prompt files (prompts/*.md) registered as MCP prompts with their typed arguments."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import PromptArgument as McpPromptArgument

from rooflens import prompts


def register(mcp: MCPServer) -> None:
    """Each prompt file becomes an MCP prompt; a bad argument is refused (INVALID_PARAMS)."""
    for spec in prompts.load_prompts():

        def fill(_spec: prompts.PromptSpec = spec, **arguments: str) -> str:
            return prompts.render(_spec, **arguments)

        mcp.add_prompt(
            Prompt(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                arguments=[
                    McpPromptArgument(name=a.name, description=a.description, required=a.required)
                    for a in spec.arguments
                ],
                fn=fill,
            )
        )
