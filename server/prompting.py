"""The prompt files (prompts/*.md) registered as MCP prompts, their arguments checked like a
tool's: the run or job must be the caller's, a category must be one of the run's and suit the
prompt (the analyst the engine assigns it, `skill_for`), and comparative scope needs a run
that compares two traces (the orchestrator: a reference trace). A refusal is INVALID_PARAMS
with what to pass instead (server/middleware.py), never a prompt rendered for a wrong run."""

from __future__ import annotations

from functools import partial
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import PromptArgument as McpPromptArgument
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from rooflens import prompts
from rooflens.analyzers.pipeline.ledger import RunFolderError
from rooflens.analyzers.pipeline.steps import PREPARED
from rooflens.analyzers.prepare.categories import (
    CPU_IDLE,
    KERNEL_FUSION,
    MULTI_KERNEL,
    CategoryLookupError,
    analyst_for,
    find_category,
)

from .jobs import JobNotFound, find_job
from .paths import PathRefused
from .run_access import manifest_categories
from .runs import Run, RunNotFound
from .state import AppState

COMPARATIVE = "comparative"
SYSTEM = (CPU_IDLE, MULTI_KERNEL, KERNEL_FUSION)


class PromptArgumentError(ValueError):
    """A prompt argument that does not fit; the message says what to pass."""


def register(mcp: MCPServer) -> None:
    """Each prompt file becomes an MCP prompt; a bad argument is refused (INVALID_PARAMS)."""
    for spec in prompts.load_prompts():
        mcp.add_prompt(
            Prompt(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                arguments=[
                    McpPromptArgument(name=a.name, description=a.description, required=a.required)
                    for a in spec.arguments
                ],
                fn=partial(fill, spec),
                context_kwarg="ctx",
            )
        )


def fill(spec: prompts.PromptSpec, ctx: Context, **arguments: str) -> str:
    """The prompt rendered, once its arguments are checked against the caller's runs."""
    state: AppState = ctx.request_context.lifespan_context
    try:
        checked = check_arguments(spec, dict(arguments), state, state.owner(ctx.headers))
        return prompts.render(spec, **checked)
    except ValueError as exc:  # the SDK would replace the message with a generic one
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


def check_arguments(
    spec: prompts.PromptSpec, given: dict[str, Any], state: AppState, owner: Any
) -> dict[str, Any]:
    """`given` with the category as the run's key; raises PromptArgumentError."""
    arg = spec.argument("comparison_scope")
    scope = given.get("comparison_scope") or (arg.default if arg else None)
    if spec.argument("job_id") and given.get("job_id"):
        try:
            find_job(state, str(given["job_id"]), owner)
        except (JobNotFound, PathRefused, RunFolderError) as exc:
            raise PromptArgumentError(f"prompt {spec.name!r}: {exc}") from None
    no_reference = given.get("reference_trace") in (None, "", "none")
    if spec.argument("reference_trace") and scope == COMPARATIVE and no_reference:
        raise PromptArgumentError(
            f"prompt {spec.name!r}: comparative scope needs reference_trace, the trace to "
            "compare with; leave comparison_scope out for one trace"
        )
    if not (spec.argument("run_id") and given.get("run_id")):
        return given
    try:
        run = state.runs.get(str(given["run_id"]), owner)
    except (RunNotFound, PathRefused, RunFolderError) as exc:
        raise PromptArgumentError(f"prompt {spec.name!r}: {exc}") from None
    if scope == COMPARATIVE and run.record.compare_with is None:
        raise PromptArgumentError(
            f"prompt {spec.name!r}: run {run.id} compares no traces, so comparative scope does "
            "not apply; pass comparison_scope=standalone, or start a comparative run with "
            "load_trace(path, compare_with=reference)"
        )
    if spec.argument("category"):
        default = spec.argument("category").default
        given["category"] = suited_category(spec.name, given.get("category") or default, run, state)
    return given


def suited_category(prompt: str, category: str | None, run: Run, state: AppState) -> str:
    """The run's key for `category` (key or display name, any case) when the engine gives
    that category to the analyst `prompt`; raises PromptArgumentError."""
    text = str(category or "")
    key = text.lower()
    if run.done(PREPARED):
        names = manifest_categories(state, run)
        try:
            key = find_category(text, list(names))
        except CategoryLookupError as exc:
            raise PromptArgumentError(f"prompt {prompt!r}: {exc}") from None
    owner = "" if key in SYSTEM else analyst_for(key)
    if owner != prompt:
        fits = f"the {owner!r} prompt's" if owner else "a system category (no category argument)"
        raise PromptArgumentError(
            f"prompt {prompt!r} does not analyse category {key!r}: it is {fits}; start the "
            f"{owner or key.replace('_', '-')!r} prompt for it"
        )
    return key
