"""The orchestrator and analyst prompts (Markdown files) and their loader.

Each prompt is a Markdown file with a small front matter block::

    ---
    name: gemm
    title: GEMM analyst
    description: One line.
    arguments:
      - name: run_id
        description: Run id returned by load_trace.
        required: true
      - name: comparison_scope
        description: standalone or comparative.
        required: false
        default: standalone
        choices: standalone, comparative
    ---

Only ``key: value`` lines and the ``arguments:`` list are understood; no YAML library needed.
The body uses ``{argument}`` placeholders that :func:`render` fills. Two comment lines shape
it further, so guidance shared by several prompts is written once and a scope's guidance
reaches only the runs of that scope:

* ``<!-- include NAME -->`` is replaced by the fragment ``_NAME.md`` of this package (a
  fragment is no prompt of its own);
* ``<!-- when ARG=VALUE -->`` ... ``<!-- end when -->`` keeps the lines between only when the
  argument ``ARG`` is ``VALUE`` (its default when not given).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources

__all__ = ["PromptArgument", "PromptSpec", "get_prompt", "load_prompts", "parse_prompt", "render"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_INCLUDE = re.compile(r"^<!-- include ([a-z0-9-]+) -->$", re.MULTILINE)
_WHEN = re.compile(
    r"^<!-- when (\w+)=([\w-]+) -->\n(.*?)^<!-- end when -->\n?", re.MULTILINE | re.DOTALL
)


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str
    required: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()  # the values allowed; empty: any text


@dataclass(frozen=True)
class PromptSpec:
    name: str
    title: str
    description: str
    arguments: list[PromptArgument] = field(default_factory=list)
    body: str = ""

    def argument(self, name: str) -> PromptArgument | None:
        return next((a for a in self.arguments if a.name == name), None)


def _scalar(raw: str) -> str:
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    return value


def _as_bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in {"true", "yes", "1"}:
        return True
    if value in {"false", "no", "0", ""}:
        return False
    raise ValueError(f"not a boolean: {raw!r}")


def parse_prompt(text: str) -> PromptSpec:
    """Parse one prompt file (front matter + Markdown body)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise ValueError("prompt file must start with a '---' front matter line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("front matter is not closed by '---'") from None
    meta: dict[str, str] = {}
    args: list[dict[str, str]] = []
    in_args = False
    for number, line in enumerate(lines[1:end], start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if in_args and line.startswith((" ", "\t")):
            item = line.strip()
            if item.startswith("- "):
                args.append({})
                item = item[2:].strip()
            if not args:
                raise ValueError(f"line {number}: argument field before any '- name:'")
            key, sep, value = item.partition(":")
            if not sep:
                raise ValueError(f"line {number}: expected 'key: value'")
            args[-1][key.strip()] = _scalar(value)
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise ValueError(f"line {number}: expected 'key: value'")
        key = key.strip()
        in_args = key == "arguments"
        if not in_args:
            meta[key] = _scalar(value)
    for key in ("name", "title", "description"):
        if not meta.get(key):
            raise ValueError(f"front matter is missing {key!r}")
    arguments = []
    for raw in args:
        if "name" not in raw:
            raise ValueError("every argument needs a name")
        arguments.append(
            PromptArgument(
                name=raw["name"],
                description=raw.get("description", ""),
                required=_as_bool(raw.get("required", "false")),
                default=raw.get("default"),
                choices=tuple(c.strip() for c in raw.get("choices", "").split(",") if c.strip()),
            )
        )
    body = _INCLUDE.sub(lambda m: _fragment(m.group(1)), "\n".join(lines[end + 1 :]))
    for name, _value, _kept in _WHEN.findall(body):
        if not any(a.name == name for a in arguments):
            raise ValueError(f"'when' block on {name!r}, which is no argument")
    body = body.strip() + "\n"
    return PromptSpec(meta["name"], meta["title"], meta["description"], arguments, body)


def _fragment(name: str) -> str:
    """A shared fragment's text (``_NAME.md``), without its trailing newline."""
    entry = resources.files(__name__).joinpath(f"_{name}.md")
    if not entry.is_file():
        raise ValueError(f"included fragment _{name}.md does not exist")
    return entry.read_text(encoding="utf-8").rstrip("\n")


def load_prompts() -> list[PromptSpec]:
    """All packaged prompts, sorted by name."""
    specs = []
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".md") and not entry.name.startswith("_") and entry.is_file():
            specs.append(parse_prompt(entry.read_text(encoding="utf-8")))
    return sorted(specs, key=lambda s: s.name)


def get_prompt(name: str) -> PromptSpec:
    for spec in load_prompts():
        if spec.name == name:
            return spec
    raise KeyError(name)


def render(spec: PromptSpec, **args: object) -> str:
    """Fill the ``{argument}`` placeholders of a prompt body.

    Missing required arguments raise ``ValueError``; optional ones fall back to their default
    (or an empty string). Unknown keyword arguments are rejected too.
    """
    known = {a.name for a in spec.arguments}
    unknown = sorted(set(args) - known)
    if unknown:
        raise ValueError(f"prompt {spec.name!r} has no argument(s): {', '.join(unknown)}")
    values: dict[str, str] = {}
    for arg in spec.arguments:
        given = args.get(arg.name)
        if given is None or given == "":
            if arg.required:
                raise ValueError(f"prompt {spec.name!r} needs argument {arg.name!r}")
            values[arg.name] = arg.default or ""
        else:
            values[arg.name] = str(given)
        if arg.choices and values[arg.name] not in arg.choices:
            raise ValueError(
                f"prompt {spec.name!r}: {arg.name} must be one of {', '.join(arg.choices)}, "
                f"not {values[arg.name]!r}"
            )

    def fill(match: re.Match[str]) -> str:
        return values.get(match.group(1), match.group(0))

    def when(match: re.Match[str]) -> str:
        return match.group(3) if values.get(match.group(1)) == match.group(2) else ""

    return _PLACEHOLDER.sub(fill, _WHEN.sub(when, spec.body))
