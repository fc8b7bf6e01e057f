"""The tool schemas `tools/list` sends (server/schemas.py): the same constraints in fewer bytes,
and the whole list within 25 KB, since every session pays for it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import jsonschema
import pytest
from mcp import Client
from pydantic import BaseModel, Field

from rooflens.server.app import ServerConfig, build_server
from rooflens.server.schemas import TRACE_REF, compact, result_shape
from rooflens.server.trace_text import TRACE_TEXT, TraceText, traced

TOOLS_LIST_LIMIT = 25 * 1024


class Inner(BaseModel):
    name: TraceText
    count: int = Field(ge=0, description="how many")


class Outer(BaseModel):
    run_id: str = Field(description="the run")
    label: str | None = traced("a label", default=None)
    inner: list[Inner]
    limit: int | None = Field(default=None, ge=1, le=5, description="at most this many")
    notes: list[TraceText] = Field(default_factory=list)


class Small(BaseModel):
    run_id: str
    name: TraceText


def test_compact_keeps_every_constraint_and_drops_titles() -> None:
    schema = compact(Outer.model_json_schema())
    text = json.dumps(schema)
    assert '"title"' not in text
    assert schema["properties"]["limit"] == {
        "description": "at most this many", "maximum": 5, "minimum": 1,
        "type": ["integer", "null"],
    }  # fmt: skip
    assert schema["$defs"]["Inner"]["properties"]["count"]["minimum"] == 0
    assert schema["$defs"]["Inner"]["properties"]["name"] == {"$ref": TRACE_REF}
    assert text.count(TRACE_TEXT) == 2  # the definition, and the field with words of its own
    assert schema["properties"]["notes"]["items"] == {"$ref": TRACE_REF}
    good = Outer(run_id="r", inner=[Inner(name="n", count=1)], limit=2).model_dump()
    jsonschema.validate(good, schema)
    for bad in ({**good, "limit": 9}, {**good, "inner": [{"name": "n", "count": -1}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_a_result_shape_is_the_paths_to_trace_text() -> None:
    shape = result_shape(Outer.model_json_schema())
    assert shape["properties"] == {
        "label": {"$ref": TRACE_REF},
        "inner": {"items": {"properties": {"name": {"$ref": TRACE_REF}}}},
        "notes": {"items": {"$ref": TRACE_REF}},
    }
    assert shape["$defs"]["TraceText"]["description"] == TRACE_TEXT
    # used once or twice, the note itself is shorter than references and a definition
    assert result_shape(Small.model_json_schema())["properties"] == {
        "name": {"description": TRACE_TEXT}
    }
    result = Outer(run_id="r", label=None, inner=[Inner(name="n", count=1)]).model_dump()
    jsonschema.validate(result, shape)  # looser than the model, never wrong about it


@pytest.mark.anyio
async def test_tools_list_fits_25_kb_with_every_argument_described(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with Client(build_server(ServerConfig(allowed_dirs=[tmp_path]))) as client:
            listed = await client.list_tools()
    size = len(listed.model_dump_json(by_alias=True, exclude_none=True))
    assert size <= TOOLS_LIST_LIMIT, size
    for tool in listed.tools:
        assert "  " not in tool.description and '"title": "' not in json.dumps(tool.input_schema)
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), (tool.name, name)
