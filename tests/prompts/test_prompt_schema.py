"""Every tool, argument and field a prompt names exists in the server's schemas.

A prompt told the model to pass `comparison_scope` (no tool took it) and to submit a status
and a note (submit_findings had no such fields): the model's calls were refused or silently
dropped. Here each paragraph or list item that calls a tool is read, and every backticked
name in it must be that tool's, one of its arguments (nested item fields included), one of
its result fields or enumerated values, a category key, or (where the paragraph also names a
rooflens:// resource to read) a key of the JSON documents a run or a job writes or a column of
a job's tables. A paragraph that only tells the model to read a job's resource is held to the
same words, and every rooflens:// URI a prompt names is one the server serves.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from rooflens.analyzers.prepare.categories import SKILLS
from rooflens.analyzers.synthetic.job import JobPlan, write_job
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call
from tests.helpers.prompt_runs import CATEGORY_OF, arguments, prompt_runs

pytestmark = pytest.mark.slow  # whole analyses, in the tests or their module fixtures

CALL = re.compile(r"\b[Cc]all(?:s|ing)?\s+`([a-z_]+)`")
NAME = re.compile(r"`([a-z][a-z0-9_]*)`")
# the values the prompts are rendered with (the run and job ids are added once loaded)
EXAMPLES = {"trace": "trace.json.gz", "reference_trace": "reference.json.gz"}
EXAMPLES |= {f"category_{k}": v for k, v in CATEGORY_OF.items()}
CHUNK = re.compile(r"\n\s*\n|\n(?=\s*(?:\d+\.|-|\|)\s)")
URI = re.compile(r"rooflens://[^\s`)]*[^\s`).,:;]")
JOB_TABLES = ("ranks", "straggler_summary", "nccl_implicit_sync")


def schema_words(schema: dict[str, Any]) -> set[str]:
    """Property names and enum values anywhere in a JSON schema ($defs included)."""
    words: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            words.update(node.get("properties", {}))
            for value in node.get("enum", []):
                words.add(str(value))
            if "const" in node:
                words.add(str(node["const"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return words


def json_keys(node: Any) -> set[str]:
    """Every key of a JSON document, nested ones included."""
    if isinstance(node, dict):
        return set(map(str, node)).union(*(json_keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(json_keys(v) for v in node))
    return set()


def document_keys(folder: Path) -> set[str]:
    return set().union(*(json_keys(json.loads(p.read_text())) for p in folder.rglob("*.json")))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def template_pattern(template: str) -> re.Pattern[str]:
    """A resource template as a regex: each `{name}` one path segment, `{?q}` a query."""
    parts = re.split(r"(\{\?[^}]+\}|\{[^}]+\})", template)
    out = ""
    for part in parts:
        if part.startswith("{?"):
            out += r"(?:\?[^/]*)?"
        elif part.startswith("{"):
            out += r"[^/]+"
        else:
            out += re.escape(part)
    return re.compile(out)


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory):
    """The server's tools and resources, the rendered prompts, and the keys of a full run's
    documents and of a generated job's record and tables."""
    from rooflens.analyzers.synthetic.sample import write_sample_trace

    allowed = tmp_path_factory.mktemp("prompt_schema")
    trace = write_sample_trace(allowed / "sample.json.gz")
    write_job(allowed / "job", JobPlan(ranks=2, steps=1, collectives=1, slow_rank=1, slow_us=50))
    server = build_server(ServerConfig(allowed_dirs=[allowed]))
    # the tools' whole schemas: tools/list sends an output schema's trace-text paths only
    tools = {t.name: t for t in await server.list_tools()}
    async with Client(server) as client:
        templates = [
            r.uri_template for r in (await client.list_resource_templates()).resource_templates
        ]
        templates += [str(r.uri) for r in (await client.list_resources()).resources]
        result = await call(client, "run_full_analysis", {"path": str(trace)})
        job = await call(client, "load_job", {"paths": ["job"], "until": "none", "workers": 1})
        base = f"rooflens://jobs/{job['job_id']}"
        record = (await client.read_resource(base)).contents[0].text
        tables = [(await client.read_resource(f"{base}/tables/{t}")).contents[0].text
                  for t in JOB_TABLES]  # fmt: skip
        runs = await prompt_runs(client, allowed)
        EXAMPLES.update({f"{scope}_run": run_id for scope, run_id in runs.items()})
        EXAMPLES["job_id"] = job["job_id"]
        rendered = {}
        for prompt in (await client.list_prompts()).prompts:
            for scope in ("standalone", "comparative"):  # each scope's guidance is checked
                args = arguments(prompt, scope, runs, job["job_id"])
                got = await client.get_prompt(prompt.name, args)
                rendered[f"{prompt.name} ({scope})"] = got.messages[0].content.text
    documents = document_keys(allowed / "rooflens_runs" / result["run_id"])
    documents |= json_keys(json.loads(record))
    for table in tables:
        documents |= set(next(csv.reader(io.StringIO(table))))
    return tools, rendered, documents, [template_pattern(t) for t in templates]


@pytest.mark.anyio
async def test_every_name_in_a_tool_call_exists_in_the_schemas(served) -> None:
    tools, rendered, documents, _ = served
    assert len(rendered) == 2 * 15
    problems = []
    calls = job_reads = 0
    for prompt, text in rendered.items():
        for chunk in CHUNK.split(text):
            called = [t for t in CALL.findall(chunk)]
            job_reads += not called and "rooflens://jobs/" in chunk
            if not called and "rooflens://jobs/" not in chunk:
                continue
            calls += len(called)
            unknown_tools = [t for t in called if t not in tools]
            problems += [f"{prompt}: no tool {t!r}" for t in unknown_tools]
            vocab = set(tools) | set(SKILLS) | set(EXAMPLES.values())
            if "rooflens://" in chunk:  # it also tells the model to read a run's document
                vocab |= documents
            for name in called:
                if name in tools:
                    vocab |= schema_words(tools[name].input_schema)
                    vocab |= schema_words(tools[name].output_schema or {})
            for word in NAME.findall(chunk):
                if word not in vocab:
                    problems.append(f"{prompt}: `{word}` near {called} is in no schema")
    assert calls >= 80 and job_reads >= 2 * 4  # the job prompt's four reads, both scopes
    assert problems == []


@pytest.mark.anyio
async def test_every_resource_a_prompt_names_is_served(served) -> None:
    """Each rooflens:// URI in a rendered prompt matches one of the server's resources or
    templates (a `<run id>` written for the model to fill counts as one path segment)."""
    _, rendered, _, patterns = served
    named = {
        (prompt, uri)
        for prompt, text in rendered.items()
        for uri in URI.findall(re.sub(r"<[^>]+>", "x", text))
    }
    assert len({u for _, u in named if u.startswith("rooflens://jobs/job-")}) >= 5
    unknown = [(p, u) for p, u in named if not any(pat.fullmatch(u) for pat in patterns)]
    assert unknown == []
    tables = {u.rsplit("/", 1)[1] for _, u in named if re.search(r"//jobs/[^/]+/tables/", u)}
    assert tables == set(JOB_TABLES)  # a template's {table} takes any name: these exist
    assert not template_pattern("rooflens://jobs/{job_id}").fullmatch("rooflens://jobs/a/b")


@pytest.mark.anyio
async def test_the_check_catches_what_the_old_prompts_said(served) -> None:
    """The words that misled a model before are not in the schemas they were used with."""
    tools, _, _, _ = served
    analysis = schema_words(tools["run_category_analysis"].input_schema)
    assert "comparison_scope" not in analysis
    submit = schema_words(tools["submit_findings"].input_schema)
    assert {"status", "note", "confidence_reason", "nothing_to_report", "error"} <= submit
    compose = schema_words(tools["compose_report"].input_schema)
    assert {"executive_summary", "recommendation"} <= compose
