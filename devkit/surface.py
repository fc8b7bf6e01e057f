"""The orchestrator recipe driven by a scripted client, with the size of everything it reads.

A model that follows the orchestrator prompt calls every step's tool, starts every analyst
prompt, reads the run's resources and renders the prompts; each of those answers lands in its
context. `run_recipe` does all of it on one trace through an MCP `Client` and `job_recipe` on
the ranks of a job (load_job, the job's resources, then the straggler's run in full), and a
`Sizes` records the bytes of every answer: a tool result as the JSON of its `CallToolResult`,
a resource as the text (or base64 blob) of its contents, a prompt as its rendered text, and
`tools/list` as the JSON of its result. `benchmarks/surface_sizes.py` prints them and
`tests/server/test_surface_sizes.py` holds them to the limits.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client, MCPError

# resources a model fetches only when it asks for the whole binary artifact by name
EXPLICIT_DOWNLOADS = ("?full=1", "/workbook")
SUMMARY = (
    "Most GPU time goes to matrix multiplies; the elementwise kernels and the exposed "
    "communication are the next opportunities."
)
RECOMMENDATION = "Overlap the communication with the backward pass before tuning kernels."
ANALYST = {
    "gemm": "gemm", "groupedgemm_fwd": "gemm", "groupedgemm_bwd": "gemm",
    "sdpa_fwd": "sdpa", "sdpa_bwd": "sdpa", "inferenceattention": "sdpa",
    "elementwise": "elementwise", "reduce": "reduce", "triton": "triton",
    "norm_fwd": "norm", "norm_bwd": "norm", "rmsnorm": "norm",
    "conv_fwd": "convolution", "conv_bwd": "convolution",
    "moe_fused": "moe", "moe_unfused": "moe",
}  # fmt: skip
SYSTEM = {"multi_kernel": "multi-kernel", "kernel_fusion": "kernel-fusion", "cpu_idle": "cpu-idle"}


def _bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


@dataclass
class Sizes:
    """Bytes of every answer, by kind: (what was asked, bytes)."""

    tools: list[tuple[str, int]] = field(default_factory=list)
    resources: list[tuple[str, int]] = field(default_factory=list)
    prompts: list[tuple[str, int]] = field(default_factory=list)
    tools_list: int = 0

    @staticmethod
    def largest(rows: list[tuple[str, int]]) -> tuple[str, int]:
        return max(rows, key=lambda row: row[1], default=("", 0))

    def bounded(self) -> list[tuple[str, int]]:
        """The resources read by default (not the explicit downloads of a whole binary)."""
        return [r for r in self.resources if not r[0].endswith(EXPLICIT_DOWNLOADS)]


@dataclass
class Model:
    """A scripted model: calls tools, reads resources, renders prompts, sizing each answer."""

    client: Client
    sizes: Sizes = field(default_factory=Sizes)

    async def tool(self, name: str, **args: Any) -> dict[str, Any]:
        result = await self.client.call_tool(name, args)
        dumped = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        self.sizes.tools.append((name, _bytes(dumped)))
        if result.is_error:
            text = " ".join(getattr(c, "text", "") for c in result.content)
            raise AssertionError(f"{name}({args}): {text}")
        return result.structured_content or {}

    async def read(self, uri: str) -> str:
        contents = (await self.client.read_resource(uri)).contents
        text = "".join(getattr(c, "text", None) or getattr(c, "blob", "") for c in contents)
        self.sizes.resources.append((uri, len(text.encode("utf-8"))))
        return text

    async def prompt(self, name: str, **args: str) -> str:
        messages = (await self.client.get_prompt(name, args)).messages
        text = "".join(getattr(m.content, "text", "") for m in messages)
        self.sizes.prompts.append((name, len(text.encode("utf-8"))))
        return text

    async def list_tools(self) -> None:
        listed = await self.client.list_tools()
        self.sizes.tools_list = _bytes(listed.model_dump(by_alias=True, exclude_none=True))


async def analyst(model: Model, run_id: str, key: str, scope: str) -> None:
    """The three-call recipe of an analyst prompt, the draft's words submitted back."""
    if key in SYSTEM:
        await model.prompt(SYSTEM[key], run_id=run_id, comparison_scope=scope)
    else:
        prompt = ANALYST.get(key, "generic-op")
        await model.prompt(prompt, run_id=run_id, category=key, comparison_scope=scope)
    await model.tool("run_category_analysis", run_id=run_id, category=key)
    draft = await model.tool("draft_findings", run_id=run_id, category=key)
    if not draft["items"]:
        note = "Nothing in this category reaches the server's threshold."
        await model.tool(
            "submit_findings", run_id=run_id, category=key, status="nothing_to_report", note=note
        )
        return
    items = [
        {
            "rank": item["rank"],
            "insight": f"{item['insight']} This is where the group loses time.",
            "resolution": "Profile again after the change and compare this group's time.",
        }
        for item in draft["items"]
    ]
    await model.tool(
        "submit_findings", run_id=run_id, category=key, items=items,
        note="Each item below is one ranked group of this category.",
    )  # fmt: skip
    await model.tool("validate_findings", run_id=run_id, category=key)


async def analyse_run(model: Model, run_id: str, scope: str = "standalone") -> list[str]:
    """Steps 4-11 of the orchestrator on a loaded run, then every resource of the run."""
    prepared = await model.tool("prepare_category_data", run_id=run_id)
    listed = {c["name"]: c for c in prepared["categories"]}
    for key in ("multi_kernel", "kernel_fusion"):
        if key in listed:
            await analyst(model, run_id, key, scope)
    if prepared["gpu_idle_percent"] > 15 or scope == "comparative":
        await analyst(model, run_id, "cpu_idle", scope)
    for key, entry in listed.items():
        if entry["analysable"] and entry["tier"] == "compute_kernel":
            await analyst(model, run_id, key, scope)
    await model.tool("aggregate_findings", run_id=run_id)
    await model.tool("validate_run", run_id=run_id)
    await model.prompt("model-identification", run_id=run_id, comparison_scope=scope)
    identity = await model.tool("get_model_identification_data", run_id=run_id)
    await model.tool("submit_model_info", run_id=run_id, info=identity["identification"])
    await model.tool("render_performance_plot", run_id=run_id, title="Sizes of the surface")
    top = (await model.tool("query_operations", run_id=run_id, limit=1))["rows"]
    if top:
        await model.tool("what_if", run_id=run_id, changes=[f"op:{top[0]['name']}=0.5"])
    await model.tool(
        "compose_report", run_id=run_id, executive_summary=SUMMARY, recommendation=RECOMMENDATION
    )
    await model.tool("validate_report", run_id=run_id)
    await model.tool("list_tables", run_id=run_id)
    await model.tool("query_operations", run_id=run_id)
    await read_run(model, run_id, list(listed))
    return list(listed)


async def read_run(model: Model, run_id: str, categories: list[str]) -> None:
    """Every resource of the run: each page of a paged one is a read of its own, the first
    page stands for the rest (the pages are cut to the same limit)."""
    base = f"rooflens://runs/{run_id}"
    await model.read("rooflens://runs")
    for leaf in ("manifest", "critical_path", "tables", "plot", "plot?full=1", "workbook"):
        await model.read(f"{base}/{leaf}")
    await read_pages(model, f"{base}/priorities")
    await read_pages(model, f"{base}/report")
    tables = json.loads(await model.read(f"{base}/tables"))["tables"]
    for table in tables:
        await model.read(f"{base}/tables/{table['name']}")
    for key in categories:
        for kind in ("metrics", "ops", "findings"):
            try:
                await model.read(f"{base}/{kind}/{key}")
            except MCPError:  # not every category has every file
                continue


async def read_pages(model: Model, uri: str) -> None:
    """A paged resource: its first read, then every section or page it links to."""
    base, seen, queue = uri.split("?")[0], {uri}, [uri]
    while queue:
        text = await model.read(queue.pop(0))
        for link in re.findall(r"rooflens://[^\s`)*\]\"},]+", text):
            if link.split("?")[0] == base and "?" in link and link not in seen:
                seen.add(link)
                queue.append(link)


async def render_prompts(
    model: Model, run_id: str, categories: list[str], job_id: str | None = None
) -> None:
    """Every prompt, rendered once for the run (the job prompt for the job); an analyst
    prompt only with a category of the run it analyses (prompts refuse any other)."""
    for listed in (await model.client.list_prompts()).prompts:
        names = {a.name for a in listed.arguments or []}
        args = {"run_id": run_id} if "run_id" in names else {}
        if "trace" in names:
            args["trace"] = "trace.json.gz"
        if "category" in names:
            keys = [k for k in categories if ANALYST.get(k, "generic-op") == listed.name]
            keys = [k for k in keys if k not in SYSTEM]
            if not keys:
                continue
            args["category"] = keys[0]
        if "job_id" in names:
            if job_id is None:
                continue
            args["job_id"] = job_id
        await model.prompt(listed.name, **args)


async def run_recipe(client: Client, trace: Path) -> Sizes:
    """The orchestrator recipe on one trace."""
    model = Model(client)
    await model.list_tools()
    await model.prompt("orchestrator", trace=str(trace))
    await model.tool("list_platforms")
    inspected = await model.tool("inspect_trace", path=str(trace))
    platform = inspected["health"]["gpu"]["suggested_platform"]
    loaded = await model.tool("load_trace", path=str(trace), platform=platform)
    categories = await analyse_run(model, loaded["run_id"])
    await render_prompts(model, loaded["run_id"], categories)
    return model.sizes


async def job_recipe(client: Client, paths: list[Path], platform: str | None = None) -> Sizes:
    """The orchestrator's distributed-job recipe: load_job, the job prompt and resources,
    then the straggler's run analysed in full and the job's what-if."""
    model = Model(client)
    await model.list_tools()
    await model.prompt("orchestrator", trace=" ".join(map(str, paths)))
    loaded = await model.tool("load_job", paths=[str(p) for p in paths], platform=platform)
    job_id = loaded["job_id"]
    overview = await model.tool("get_job_overview", job_id=job_id)
    await model.prompt("job-analysis", job_id=job_id)
    base = f"rooflens://jobs/{job_id}"
    await model.read(base)
    await model.read(f"{base}/plot")
    await model.read(f"{base}/plot?full=1")
    await read_pages(model, f"{base}/report")
    for table in ("straggler_summary", "ranks", "nccl_implicit_sync"):
        await model.read(f"{base}/tables/{table}")
    straggler = (overview["overview"].get("straggler") or {}).get("rank", 0)
    ranks = {r["rank"]: r for r in overview["ranks"]}
    run_id = (ranks.get(straggler) or next(iter(ranks.values())))["run_id"]
    await model.tool("job_what_if", job_id=job_id, changes=[f"rank{straggler}@gpu:gemm=0.5"])
    categories = await analyse_run(model, run_id)
    await render_prompts(model, run_id, categories, job_id)
    return model.sizes
