"""Every bad input of the corpus through the CLI and the MCP tools: no traceback, a message
that names the problem, and output that validates against its own schema (no NaN)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from devkit.badinput.corpus import CASES, Case
from rooflens.cli.main import main
from rooflens.server.app import ServerConfig, build_server

pytestmark = pytest.mark.slow  # every damaged trace through whole CLI and MCP runs

AVAILABLE = [c for c in CASES if c.available()]
LOADED = [c for c in AVAILABLE if c.outcome == "loaded"]


def strict_json(text: str) -> Any:
    """JSON that a strict parser accepts (NaN and Infinity are not JSON)."""

    def refuse(token: str) -> None:
        raise ValueError(f"{token} in the output")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def written(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if case.limit_mb is not None:
        monkeypatch.setenv("ROOFLENS_MAX_TRACE_MB", str(case.limit_mb))
    return case.write(tmp_path / "in")


@pytest.mark.parametrize("case", AVAILABLE, ids=lambda c: c.name)
def test_cli_inspect(case: Case, written: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["inspect", str(written), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if case.outcome == "refused":
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1 and case.message in err
    else:
        assert code == 0, err
        assert strict_json(out)["gpu_timeline"]


@pytest.mark.parametrize("case", AVAILABLE, ids=lambda c: c.name)
def test_cli_analyze(
    case: Case, written: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "run"
    code = main(["analyze", str(written), "--out", str(out_dir), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if case.outcome == "refused":
        assert code == 2 and case.message in err and not out_dir.exists()
        return
    assert code == 0, err
    assert strict_json(out)
    assert main(["validate", str(out_dir)]) == 0, capsys.readouterr().out


async def tool_results(folder: Path, path: Path, names: list[str]) -> dict[str, Any]:
    async with Client(build_server(ServerConfig(allowed_dirs=[folder]))) as client:
        schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        results = {}
        for name in names:
            results[name] = (schemas[name], await client.call_tool(name, {"path": str(path)}))
    return results


@pytest.mark.anyio
@pytest.mark.parametrize("case", AVAILABLE, ids=lambda c: c.name)
async def test_mcp_tools(case: Case, written: Path) -> None:
    names = ["inspect_trace", "load_trace"]
    if case.outcome == "loaded":
        names.append("run_full_analysis")
    with anyio.fail_after(120):
        results = await tool_results(written.parent, written, names)
    for name, (schema, result) in results.items():
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert "Traceback" not in text
        if case.outcome == "refused":
            assert result.is_error and case.message in text, (name, text)
        else:
            assert not result.is_error, (name, text)
            jsonschema.validate(result.structured_content, schema)
            assert strict_json(text) == result.structured_content


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
