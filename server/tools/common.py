"""What every tool module shares: annotations, argument types, the run and category
resolvers, and the call into the engine off the event loop.

Tools are thin: arguments are checked here (names checked against the run before they
touch a path; an unknown argument never gets this far: middleware.py refuses it for every
tool), the engine does the work on a worker thread, and anything the model can fix comes
back as a `ToolError` that says what to do next.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from rooflens.analyzers.findings.drafting.submission import SubmissionError
from rooflens.analyzers.job.cluster import ClusterError
from rooflens.analyzers.job.inputs import JobInputError
from rooflens.analyzers.job.job_run import JobFailed
from rooflens.analyzers.perf.categories import CategoryFileError
from rooflens.analyzers.perf.platforms import PlatformFileError, UnknownPlatform
from rooflens.analyzers.pipeline.ledger import RunFolderError
from rooflens.analyzers.pipeline.steps import NotAnalysable, StepMissing
from rooflens.analyzers.prepare.categories import CategoryLookupError, find_category
from rooflens.analyzers.replay.graph import CannotReplay
from rooflens.analyzers.replay.what_if import ChangeError
from rooflens.analyzers.trace.errors import TraceError

from ..jobs import JobNotFound
from ..loading import LoadArguments, pipeline
from ..owners import Owner, split_handle
from ..paths import PathRefused
from ..runs import Run, RunNotFound
from ..state import AppState

T = TypeVar("T")
Ctx = Context[AppState]

# Only the hints that mean something are sent (every session pays for tools/list): the
# destructive and idempotent hints only count for a tool that is not read-only, and
# read_only_hint=False is the default.
READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# writes or rewrites one run's artifacts; the same call again gives the same files
WRITES_RUN = ToolAnnotations(destructive_hint=False, idempotent_hint=True, open_world_hint=False)

RunIdArg = Annotated[
    str,
    Field(description="The run_id load_trace returned, whole."),
]
CategoryArg = Annotated[
    str,
    Field(description="A category prepare_category_data lists (key or name, any case)."),
]
PathArg = Annotated[
    str,
    Field(
        description="A .json(.gz) profiler trace in the allowed directories (relative to "
        "the first)."
    ),
]
PlatformArg = Annotated[
    str | None,
    Field(description="A list_platforms name (H100, MI300X); omit for the trace's own."),
]
PlatformFileArg = Annotated[
    str | None,
    Field(description="A platform JSON file (ours or TraceLens's) instead of platform."),
]
CaptureFolderArg = Annotated[
    str | None,
    Field(description="Graph-capture traces of a replay; default capture_traces/ beside it."),
]
LimitArg = Annotated[int, Field(ge=1, le=200, description="At most this many rows.")]
OffsetArg = Annotated[int, Field(ge=0, description="Rows to skip (the next page).")]

# engine errors a model or user can act on -> what to do next
NEXT_STEP: dict[type[Exception], str] = {
    TraceError: "pass a PyTorch profiler trace (.json or .json.gz)",
    PathRefused: "pass a path inside the allowed directories",
    UnknownPlatform: "call list_platforms for the known names, or pass platform_file",
    PlatformFileError: "fix the platform file or pass a catalogue platform name",
    CategoryFileError: "fix the categories file",
    RunFolderError: "start a new run with load_trace",
    SubmissionError: "fix every listed problem and submit again",
    # these messages already name the call to make, or what to pass
    LoadArguments: "",
    CategoryLookupError: "",
    StepMissing: "",
    NotAnalysable: "",
    RunNotFound: "",
    JobInputError: "",
    ClusterError: "",
    JobFailed: "check the traces: each rank's reason is given",
    ChangeError: "",
    CannotReplay: "",
    JobNotFound: "",
}


def app_state(ctx: Context) -> AppState:
    return ctx.request_context.lifespan_context


def as_tool_error(exc: Exception) -> ToolError:
    """The error's message, and what to do next unless the message already says so (a
    "pass ..." of its own: a second, generic one would contradict it)."""
    text = str(exc)
    hint = next((h for t, h in NEXT_STEP.items() if isinstance(exc, t)), "")
    told = text.startswith("pass ") or "; pass " in text
    return ToolError(f"{text}; {hint}" if hint and not told else text)


async def engine(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run `fn` on a worker thread; errors with a next step become ToolErrors."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    except ToolError:
        raise
    except tuple(NEXT_STEP) as exc:
        raise as_tool_error(exc) from exc


def owner(ctx: Context) -> Owner:
    """Who the caller is, as far as runs go (`AppState.owner`); a stateless HTTP caller's
    key is new with each call, and names everything the call makes."""
    return app_state(ctx).owner(ctx.headers)


async def open_run(run_id: str, ctx: Ctx) -> Run:
    """The run named by `run_id` (with its key for a stateless HTTP caller), if this caller
    may use it; its paths checked again."""
    if split_handle(run_id, "job") is not None:
        raise ToolError(
            f"{run_id} is a job id; the run tools take one rank's run id, which "
            f"get_job_overview(job_id={run_id!r}) lists for every rank"
        )
    return await engine(app_state(ctx).runs.get, run_id, owner(ctx))


RunDep = Annotated[Run, Resolve(open_run)]


def run_categories(st: AppState, run: Run) -> list[tuple[str, str]]:
    """(key, display name) of the run's categories; the run must be prepared."""
    manifest = pipeline(st, run).category_data().manifest
    return [(c.name, c.display_name) for c in manifest.categories]


async def category_key(run: RunDep, category: str, ctx: Ctx) -> str:
    """The key of the run's category named `category` (key or display name, any case)."""
    categories = await engine(run_categories, app_state(ctx), run)
    try:
        return find_category(category, categories)
    except CategoryLookupError as exc:
        raise as_tool_error(exc) from exc


CategoryDep = Annotated[str, Resolve(category_key)]
