"""Every tool, argument and field a prompt names exists in the server's schemas.

A prompt told the model to pass `comparison_scope` (no tool took it) and to submit a status
and a note (submit_findings had no such fields): the model's calls were refused or silently
dropped. Here each paragraph or list item that calls a tool is read, and every backticked
name in it must be that tool's, one of its arguments (nested item fields included), one of
its result fields or enumerated values, a category key, or (where the paragraph also names a
rooflens:// resource to read) a key of the JSON documents a run writes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from rooflens.analyzers.prepare.categories import SKILLS
from rooflens.server.app import ServerConfig, build_server
from tests.helpers.mcp_client import call

CALL = re.compile(r"\b[Cc]all(?:s|ing)?\s+`([a-z_]+)`")
NAME = re.compile(r"`([a-z][a-z0-9_]*)`")
EXAMPLES = {"run_id": "run-0123456789ab", "category": "gemm", "trace": "trace.json.gz"}
CHUNK = re.compile(r"\n\s*\n|\n(?=\s*(?:\d+\.|-|\|)\s)")


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


def document_keys(folder: Path) -> set[str]:
    keys: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            keys.update(map(str, node))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for path in folder.rglob("*.json"):
        walk(json.loads(path.read_text()))
    return keys


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def served(tmp_path_factory: pytest.TempPathFactory):
    """The server's tools, the rendered prompts, and the keys of a full run's documents."""
    from rooflens.analyzers.trace.synthetic import write_sample_trace

    allowed = tmp_path_factory.mktemp("prompt_schema")
    trace = write_sample_trace(allowed / "sample.json.gz")
    async with Client(build_server(ServerConfig(allowed_dirs=[allowed]))) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await call(client, "run_full_analysis", {"path": str(trace)})
        rendered = {}
        for prompt in (await client.list_prompts()).prompts:
            args = {a.name: EXAMPLES[a.name] for a in prompt.arguments if a.required}
            for scope in ("standalone", "comparative"):  # each scope's guidance is checked
                got = await client.get_prompt(prompt.name, {**args, "comparison_scope": scope})
                rendered[f"{prompt.name} ({scope})"] = got.messages[0].content.text
    documents = document_keys(allowed / "rooflens_runs" / result["run_id"])
    return tools, rendered, documents


@pytest.mark.anyio
async def test_every_name_in_a_tool_call_exists_in_the_schemas(served) -> None:
    tools, rendered, documents = served
    assert len(rendered) == 2 * 14
    problems = []
    calls = 0
    for prompt, text in rendered.items():
        for chunk in CHUNK.split(text):
            called = [t for t in CALL.findall(chunk)]
            if not called:
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
    assert calls >= 80
    assert problems == []


@pytest.mark.anyio
async def test_the_check_catches_what_the_old_prompts_said(served) -> None:
    """The words that misled a model before are not in the schemas they were used with."""
    tools, _, _ = served
    analysis = schema_words(tools["run_category_analysis"].input_schema)
    assert "comparison_scope" not in analysis
    submit = schema_words(tools["submit_findings"].input_schema)
    assert {"status", "note", "confidence_reason", "nothing_to_report", "error"} <= submit
    compose = schema_words(tools["compose_report"].input_schema)
    assert {"executive_summary", "recommendation"} <= compose
