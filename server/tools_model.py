"""Model identification and plot tools, and the prompt files registered as MCP prompts."""

from __future__ import annotations

import json
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import PromptArgument as McpPromptArgument
from pydantic import BaseModel

from rooflens import prompts
from rooflens.analyzers.findings.model_info import ModelIdentification, write_model_identification
from rooflens.analyzers.findings.plot import render_plot
from rooflens.analyzers.report.write_csv import atomic_write_bytes
from rooflens.server.runs import AGGREGATED, LOADED
from rooflens.server.tools import WRITES_RUN, Ctx, engine, state


class ModelIdentificationData(BaseModel):
    run_id: str
    identification: ModelIdentification
    nn_modules: list[str]
    nn_modules_total: int


class PlotOutcome(BaseModel):
    run_id: str
    drawn: bool
    path: str | None
    reason: str | None
    categories_drawn: list[str]


MODULES_SHOWN = 60


def _identify(out_dir: Path) -> tuple[ModelIdentification, list[str]]:
    found = write_model_identification(out_dir)
    if found is None:
        raise ToolError("the run has no operator table (a GPU-only trace): nothing to identify")
    modules = (out_dir / "metadata" / "nn_modules.txt").read_text().split()
    return found, modules


def _submit(out_dir: Path, info: ModelIdentification) -> ModelIdentification:
    text = json.dumps(info.model_dump(exclude_defaults=True), indent=2) + "\n"
    atomic_write_bytes(out_dir / "model_info.json", text.encode("utf-8"))
    found = write_model_identification(out_dir)
    return found if found is not None else info


def register(mcp: MCPServer) -> None:
    @mcp.tool(title="Model identification data", annotations=WRITES_RUN)
    async def get_model_identification_data(run_id: str, ctx: Ctx) -> ModelIdentificationData:
        """The module names and the deterministic guess of model family, size and precision."""
        run = state(ctx).runs.get(run_id)
        run.require(LOADED, "load_trace")
        found, modules = await engine(_identify, run.out_dir)
        return ModelIdentificationData(
            run_id=run.id,
            identification=found,
            nn_modules=modules[:MODULES_SHOWN],
            nn_modules_total=len(modules),
        )

    @mcp.tool(title="Submit model info", annotations=WRITES_RUN)
    async def submit_model_info(
        run_id: str, info: ModelIdentification, ctx: Ctx
    ) -> ModelIdentification:
        """Record the model's identity as you judge it; your values override the guess."""
        run = state(ctx).runs.get(run_id)
        run.require(LOADED, "load_trace")
        return await engine(_submit, run.out_dir, info)

    @mcp.tool(title="Render performance plot", annotations=WRITES_RUN)
    async def render_performance_plot(run_id: str, title: str, ctx: Ctx) -> PlotOutcome:
        """Draw GPU time per category and the estimated savings (perf_improvement.png)."""
        run = state(ctx).runs.get(run_id)
        run.require(AGGREGATED, "aggregate_findings")
        result = await engine(render_plot, run.out_dir, title)
        return PlotOutcome(
            run_id=run.id,
            drawn=result.path is not None,
            path=str(result.path) if result.path else None,
            reason=result.reason,
            categories_drawn=list(result.categories_drawn),
        )


def register_prompts(mcp: MCPServer) -> None:
    """Each prompt file becomes an MCP prompt with its typed arguments."""
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
