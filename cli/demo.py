"""`rooflens demo`: the whole analysis driven as an MCP client against `rooflens serve`.

Everything the demo writes goes into one folder: `--out DIR`, else a new temporary folder
(never the current folder, which may be a clone), and the demo prints where. With no trace, a
sample trace (one training step of a tiny transformer on an MI300X) is written there. The
server runs as a stdio subprocess allowed only that folder and the trace's (its runs go to
`rooflens_runs/` in the demo's folder), and every step is a tool call, exactly as an agent
would make them. Where an agent would write prose, the demo writes a plain summary from
the ranked priorities, to show which part of the report is the model's.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from rooflens.analyzers.layout import SYSTEM_KEYS
from rooflens.analyzers.pipeline.steps import AGGREGATED, PREPARED, REPORTED, STEPS
from rooflens.analyzers.synthetic.sample import write_sample_trace
from rooflens.server.settings import WORKSPACE_NAME
from rooflens.server.step_tools import TOOL_OF_STEP

from .common import EXIT_OK, EXIT_PROBLEMS, fail

DEMO_PREFIX = "rooflens_demo_"
SAMPLE_NAME = "sample_step.json.gz"
SERVER_LOG = "rooflens_server.log"  # the server's stderr, kept out of the demo's output
TOP_PRIORITIES = 3


class DemoError(Exception):
    """A tool call failed; the message is the server's."""


def _demo_folder(out: str | None) -> Path:
    """`out` (created if missing), else a new temporary folder."""
    if out is None:
        return Path(tempfile.mkdtemp(prefix=DEMO_PREFIX))
    folder = Path(out).expanduser().absolute()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _text(contents: list[Any]) -> str:
    return "".join(getattr(c, "text", "") or "" for c in contents)


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    label = f"({arguments['category']})" if "category" in arguments else ""
    start = time.perf_counter()
    result = await client.call_tool(name, arguments)
    print(f"  -> {name}{label}  {time.perf_counter() - start:.1f} s", flush=True)
    if result.is_error:
        raise DemoError(f"{name} failed: {_text(result.content)}")
    return result.structured_content or {}


def _ordered(categories: list[dict[str, Any]]) -> list[str]:
    names = [c["name"] for c in categories if c.get("analysable")]
    system = [n for n in SYSTEM_KEYS if n in names]
    return system + [n for n in names if n not in SYSTEM_KEYS]


def executive_summary(priorities: list[dict[str, Any]]) -> str:
    """What a model would write from the ranked priorities: plain sentences, no numbers."""
    names = [f"P{p['p']} ({p['category']})" for p in priorities[:TOP_PRIORITIES]]
    if not names:
        return (
            "No finding shows a saving in this trace. Start from the GPU utilisation table "
            "and the per-category findings below."
        )
    rest = f", followed by {' and '.join(names[1:])}" if len(names) > 1 else ""
    return (
        f"The largest estimated saving is {names[0]}{rest}. The priorities table gives each "
        "estimate; the findings of each category say what to change."
    )


async def _workflow(trace: Path, folder: Path) -> bool:
    allowed = [folder] if trace.parent.is_relative_to(folder) else [folder, trace.parent]
    workspace = ["--workspace", str(folder / WORKSPACE_NAME)]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rooflens", "serve", *_allow(allowed), *workspace],
    )
    with (folder / SERVER_LOG).open("a", encoding="utf-8") as log:
        return await _drive(Client(stdio_client(params, errlog=log)), trace)


def _allow(folders: list[Path]) -> list[str]:
    return [arg for folder in folders for arg in ("--allow-dir", str(folder))]


async def _identify_and_plot(client: Client, run_id: str, platform: str | None) -> None:
    """What a model does before composing: name the model, title the plot."""
    identity = await _call(client, "get_model_identification_data", run_id=run_id)
    model = (identity.get("identification") or {}).get("model") or "Unidentified model"
    title = f"{model} on {platform or 'an unknown platform'} - Performance Breakdown"
    await _call(client, "render_performance_plot", run_id=run_id, title=title)


async def _drive(client: Client, trace: Path) -> bool:
    async with client:
        platforms = await _call(client, "list_platforms")
        print(f"     {len(platforms.get('platforms', []))} platforms known")
        inspected = await _call(client, "inspect_trace", path=str(trace))
        for warning in inspected.get("health", {}).get("warnings", []):
            if warning["code"] == "no_gpu_events":  # stop before load_trace writes a run
                raise DemoError(f"{trace.name} cannot be analysed: {warning['message']}")
        loaded = await _call(client, "load_trace", path=str(trace))
        run_id = loaded["run_id"]
        print(f"     run {run_id}: {loaded['gpu']}, platform {loaded['platform']}")
        print(f"     run folder {loaded['output_dir']}")
        for warning in loaded["health_warnings"]:
            if warning["code"] == "no_platform":  # no roofline: say how to add one
                print(f"     warning: {warning['message']}")
        done: dict[str, dict[str, Any]] = {}
        categories: list[str] = []
        for step in STEPS[1:]:  # the declared pipeline, one tool call per step
            tool = TOOL_OF_STEP[step.name]
            if step.per_category:
                for category in categories:
                    await _call(client, tool, run_id=run_id, category=category)
            elif step.name == REPORTED:
                summary = executive_summary(done[AGGREGATED].get("priorities", []))
                await _identify_and_plot(client, run_id, loaded["platform"])
                await _call(client, tool, run_id=run_id, executive_summary=summary)
            else:
                done[step.name] = await _call(client, tool, run_id=run_id)
            if step.name == PREPARED:
                categories = _ordered(done[PREPARED]["categories"])
            if step.name == AGGREGATED:
                await _call(client, "validate_run", run_id=run_id)
        checked = await _call(client, "validate_report", run_id=run_id)
        read = await client.read_resource(f"rooflens://runs/{run_id}/report")
        report = _text(read.contents)
    _summary(loaded, done[AGGREGATED], summary, checked, report)
    return bool(checked.get("valid"))


def _summary(
    loaded: dict[str, Any],
    aggregated: dict[str, Any],
    summary: str,
    checked: dict[str, Any],
    report: str,
) -> None:
    print("\nGPU utilisation:")
    for row in loaded.get("gpu_utilisation", []):
        print(f"  {row['type']:<22} {row['time_ms']:>10.3f} ms  {row['percent']:6.2f} %")
    print("Top priorities:")
    priorities = aggregated.get("priorities", [])[:TOP_PRIORITIES]
    for p in priorities:
        saving = f"~{p['percent_of_window']:.1f} % of the analysed window"
        print(f"  P{p['p']}. {p['title']} ({saving})")
    if not priorities:
        print("  (none)")
    print(f"Executive summary (the client's words, as a model would write them):\n  {summary}")
    uri = f"rooflens://runs/{loaded['run_id']}/report"
    print(f"Report: {len(report.splitlines())} lines, read through {uri}")
    print(f"  {Path(loaded['output_dir']) / 'analysis.md'}")
    if checked.get("valid"):
        print("Report validated: yes")
    else:
        print(f"Report validated: no ({len(checked.get('problems', []))} problems)")
        for problem in checked.get("problems", [])[:5]:
            print(f"  - {problem['rule']}: {problem['message']}")


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    """The errors of a group whose members may be groups themselves."""
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found


def run_demo(trace: str | None = None, out: str | None = None) -> int:
    """Analyse `trace` (or a new sample trace) over MCP, writing into `out` (else a new
    temporary folder); 0 when the report validates."""
    path = None
    if trace is not None:
        path = Path(trace).expanduser().resolve()
        if not path.is_file():
            return fail(f"demo: {path}: file not found")
    try:
        folder = _demo_folder(out)
    except OSError as exc:
        return fail(f"demo: cannot create {out}: {exc}")
    print(f"Writing into {folder}")
    if path is None:
        path = write_sample_trace(folder / SAMPLE_NAME)
        print(f"Wrote the sample trace {path}")
    allowed = " ".join(_allow([folder] if path.parent == folder else [folder, path.parent]))
    print(f"Starting `rooflens serve {allowed}` and driving the workflow:")
    failed: list[BaseException] = []
    valid = False
    try:
        valid = anyio.run(_workflow, path, folder)
    except* DemoError as group:  # raised inside the client's task groups (nested)
        failed.extend(_leaves(group))
    except* BrokenPipeError:  # `rooflens demo | head`: main() stops quietly
        raise BrokenPipeError from None
    if failed:
        print(f"rooflens demo: {failed[0]} (server log: {folder / SERVER_LOG})", file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"Everything the demo wrote is in {folder}")
    return EXIT_OK if valid else EXIT_PROBLEMS
