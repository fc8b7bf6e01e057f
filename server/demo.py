"""`rooflens demo`: the whole analysis driven as an MCP client against `rooflens serve`.

With no trace, a sample trace (one training step of a tiny transformer on an MI300X) is written
into a new `rooflens_demo/` folder. The server runs as a stdio subprocess allowed only that
folder, and every step is a tool call, exactly as an agent would make them.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from rooflens.analyzers.trace.synthetic import write_sample_trace

DEMO_FOLDER = "rooflens_demo"
SAMPLE_NAME = "sample_step.json.gz"
SYSTEM_FIRST = ("cpu_idle", "multi_kernel", "kernel_fusion")
TOP_PRIORITIES = 3


class DemoError(Exception):
    """A tool call failed; the message is the server's."""


def _demo_folder() -> Path:
    """A new folder under ./rooflens_demo, or under the temp dir if cwd is not writable."""
    base = Path.cwd() / DEMO_FOLDER
    try:
        base.mkdir(exist_ok=True)
        if not os.access(base, os.W_OK):
            raise PermissionError(str(base))
        return Path(tempfile.mkdtemp(prefix="run_", dir=base))
    except OSError:
        return Path(tempfile.mkdtemp(prefix="rooflens_demo_"))


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    label = f"({arguments['category']})" if "category" in arguments else ""
    print(f"  -> {name}{label}", flush=True)
    result = await client.call_tool(name, arguments)
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise DemoError(f"{name} failed: {text}")
    return result.structured_content or {}


async def _read_report(client: Client, run_id: str, fallback: str) -> str:
    """The report text through the run's resource, else from the file compose_report wrote."""
    try:
        read = await client.read_resource(f"rooflens://runs/{run_id}/report")
        text = "".join(getattr(c, "text", "") or "" for c in read.contents)
        if text:
            return text
    except Exception:
        pass
    try:
        return Path(fallback).read_text(encoding="utf-8")
    except OSError:
        return ""


def _ordered(categories: list[dict[str, Any]]) -> list[str]:
    names = [c["name"] for c in categories if c.get("analysable")]
    return [n for n in SYSTEM_FIRST if n in names] + [n for n in names if n not in SYSTEM_FIRST]


async def _workflow(trace: Path, folder: Path) -> bool:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rooflens.server.cli", "serve", "--allow-dir", str(folder)],
    )
    async with Client(params) as client:
        platforms = await _call(client, "list_platforms")
        print(f"     {len(platforms.get('platforms', []))} platforms known")
        await _call(client, "inspect_trace", path=str(trace))
        loaded = await _call(client, "load_trace", path=str(trace))
        run_id = loaded["run_id"]
        print(f"     run {run_id}: {loaded['gpu']}, platform {loaded['platform']}")
        prepared = await _call(client, "prepare_category_data", run_id=run_id)
        categories = _ordered(prepared["categories"])
        for category in categories:
            await _call(client, "run_category_analysis", run_id=run_id, category=category)
        for category in categories:
            await _call(client, "draft_findings", run_id=run_id, category=category)
        aggregated = await _call(client, "aggregate_findings", run_id=run_id)
        await _call(client, "validate_run", run_id=run_id)
        identity = await _call(client, "get_model_identification_data", run_id=run_id)
        model = (identity.get("identification") or {}).get("model") or "Unidentified model"
        title = f"{model} on {loaded['platform']} — Performance Breakdown"
        await _call(client, "render_performance_plot", run_id=run_id, title=title)
        composed = await _call(client, "compose_report", run_id=run_id)
        checked = await _call(client, "validate_report", run_id=run_id)
        report = await _read_report(client, run_id, composed["report"])
    _summary(loaded, aggregated, composed, checked, report)
    return bool(checked.get("valid"))


def _summary(
    loaded: dict[str, Any],
    aggregated: dict[str, Any],
    composed: dict[str, Any],
    checked: dict[str, Any],
    report: str,
) -> None:
    print("\nGPU utilisation:")
    for row in loaded.get("gpu_utilisation", []):
        print(f"  {row['type']:<22} {row['time_ms']:>10.3f} ms  {row['percent']:6.2f} %")
    print("Top priorities:")
    priorities = aggregated.get("priorities", [])[:TOP_PRIORITIES]
    for p in priorities:
        score = p.get("impact_score")
        saving = "n/a" if score is None else f"~{score:.1f} % of GPU time"
        print(f"  {p['rank']}. {p['display_name']} ({saving})")
    if not priorities:
        print("  (none)")
    print(f"Report ({len(report.splitlines())} lines): {composed['report']}")
    if checked.get("valid"):
        print("Report validated: yes")
    else:
        print(f"Report validated: no ({len(checked.get('problems', []))} problems)")
        for problem in checked.get("problems", [])[:5]:
            print(f"  - {problem['rule']}: {problem['message']}")


def run_demo(trace: str | None = None) -> int:
    """Analyse `trace` (or a new sample trace) over MCP; 0 when the report validates."""
    if trace is None:
        folder = _demo_folder()
        path = write_sample_trace(folder / SAMPLE_NAME)
        print(f"Wrote the sample trace {path}")
    else:
        path = Path(trace).expanduser().resolve()
        if not path.is_file():
            print(f"rooflens demo: {path}: file not found", file=sys.stderr)
            return 1
        folder = path.parent
    print(f"Starting `rooflens serve --allow-dir {folder}` and driving the workflow:")
    try:
        valid = anyio.run(_workflow, path, folder)
    except DemoError as exc:
        print(f"rooflens demo: {exc}", file=sys.stderr)
        return 1
    return 0 if valid else 1
