"""Tool schemas as `tools/list` sends them: the same constraints in fewer bytes.

Every session pays for `tools/list`, so what pydantic generates is reduced, without changing
what a value must be, before it is sent (server/middleware.py):

- no `title` keyword (pydantic's "Run Id" beside `run_id`);
- `anyOf: [X, {"type": "null"}]` written as `X` with `type: [X's type, "null"]` when X is a
  plain typed schema;
- the trace-text note (server/trace_text.py) defined once per schema, in `$defs/TraceText`,
  and referenced by every field that carries trace text, instead of repeated in each one.

Arguments are validated by the tools' own models, results by theirs; these schemas only
describe them, so reducing them changes no behaviour.
"""

from __future__ import annotations

import json
from typing import Any

from .trace_text import TRACE_TEXT

TRACE_DEF = "TraceText"
TRACE_REF = f"#/$defs/{TRACE_DEF}"
_MAPS = ("properties", "$defs", "patternProperties")
_ONE = ("items", "additionalProperties", "not", "contains", "propertyNames")
_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
# keywords that constrain only non-null values, so a nullable union can carry them
_TYPED = {
    "type", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "pattern", "items", "minItems", "maxItems", "properties",
    "required", "additionalProperties", "prefixItems",
}  # fmt: skip
_NULL = {"type": "null"}
NOTE = {"description": TRACE_TEXT}


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` reduced as the module docstring says; a new dict, `schema` is untouched."""
    uses = [0]
    out = _node(schema, uses)
    if uses[0]:
        defs = dict(out.get("$defs", {}))
        defs[TRACE_DEF] = {"type": "string", "description": TRACE_TEXT}
        out["$defs"] = defs
    return out


def _node(node: Any, uses: list[int]) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value in (None, [], {}):  # optional already says it
            continue
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: _node(sub, uses) for name, sub in value.items()}
        elif key in _ONE:
            out[key] = _node(value, uses)
        elif key in _LISTS and isinstance(value, list):
            out[key] = [_node(sub, uses) for sub in value]
        else:
            out[key] = value
    return _trace_ref(_nullable(out), uses)


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and _NULL in branches):
        return node
    other = branches[1 - branches.index(_NULL)]
    plain = isinstance(other.get("type"), str) and set(other) <= _TYPED
    if not plain or set(other) & (set(node) - {"anyOf"}):
        return node
    merged = {k: v for k, v in node.items() if k != "anyOf"}
    merged.update(other)
    merged["type"] = [other["type"], "null"]
    return merged


def _trace_ref(node: dict[str, Any], uses: list[int]) -> dict[str, Any]:
    """A string field described by the trace-text note: a reference to the one definition
    (its own words, when it has some, kept beside the reference)."""
    text = node.get("description")
    if node.get("type") != "string" or not isinstance(text, str) or TRACE_TEXT not in text:
        return node
    uses[0] += 1
    own = text.replace(TRACE_TEXT, "").strip().rstrip(".")
    out = {k: v for k, v in node.items() if k not in ("type", "description")}
    out["$ref"] = TRACE_REF
    if own:
        out["description"] = own
    return out


def result_shape(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema as `tools/list` sends it: only the paths that lead to trace
    text, each ending in the one trace-text definition. It is looser than the result model,
    never wrong about it (a field it leaves out may hold anything; the model validates every
    result before it is sent); what each field means is the tool's and the prompts' to say.
    """
    full = compact(schema)
    defs = full.get("$defs", {})
    out = _shape(full, defs)
    out["type"] = "object"
    uses = json.dumps(out).count(TRACE_REF)
    if uses <= 2:  # the note itself is shorter than references and their definition
        return json.loads(
            json.dumps(out).replace(json.dumps({"$ref": TRACE_REF}), json.dumps(NOTE))
        )
    if uses:
        out["$defs"] = {TRACE_DEF: NOTE}
    return out


def _resolve(node: Any, defs: dict[str, Any]) -> Any:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and node["$ref"] != TRACE_REF and seen < 20:
        target = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen += 1
    return node


def _is_trace(node: dict[str, Any]) -> bool:
    return node.get("$ref") == TRACE_REF or TRACE_TEXT in str(node.get("description", ""))


def _shape(node: Any, defs: dict[str, Any], depth: int = 0) -> dict[str, Any]:
    """The trace-text paths below `node` ({} when there is none)."""
    node = _resolve(node, defs)
    if not isinstance(node, dict) or depth > 20:
        return {}
    if _is_trace(node):
        return {"$ref": TRACE_REF}
    out: dict[str, Any] = {}
    for branch in node.get("anyOf") or node.get("oneOf") or [node]:
        branch = _resolve(branch, defs)
        if _is_trace(branch):
            return {"$ref": TRACE_REF}
        for name, sub in branch.get("properties", {}).items():
            if found := _shape(sub, defs, depth + 1):
                out.setdefault("properties", {})[name] = found
        for key in ("items", "additionalProperties"):
            if isinstance(branch.get(key), dict) and (
                found := _shape(branch[key], defs, depth + 1)
            ):
                out[key] = found
    return out
