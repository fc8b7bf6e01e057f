"""The config file's values as the parsers' defaults: a flag on the command line wins.

Each value becomes the default of the option it stands for, wrapped in `FromFile`, in every
command that takes the option (`install`); after parsing, a `FromFile` left in the namespace
means the command line did not give the option, so the file's value stands, unless the
command line gave the option's exclusive partner (`resolve`). `out` makes `--out` optional:
OUT/<trace name>. Lists (`allow-dir`) are taken only when no flag added to them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, NamedTuple

from .config import BY_NAME, KEYS, ConfigError, Found


class FromFile(NamedTuple):
    """A parser default that came from the file: replaced by the value once parsing is done,
    or dropped when its exclusive partner was given on the command line."""

    value: Any


def _command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def install(parser: argparse.ArgumentParser, found: Found) -> None:
    """Make the file's values the defaults of the commands that take them (CLI flags win).
    A value outside an option's choices is refused here, as the flag would be."""
    commands = _command_parsers(parser)
    for name, value in found.values.items():
        key = BY_NAME[name]
        if key.name == "log-level":
            continue  # global: applied by `log_level_of`
        for command, sub in commands.items():
            if key.commands is not None and command not in key.commands:
                continue
            for action in sub._actions:
                if action.dest != key.dest:
                    continue
                if action.choices is not None and value not in action.choices:
                    allowed = ", ".join(map(str, action.choices))
                    raise ConfigError(f"{found.path}: {name!r} must be one of {allowed}")
                if isinstance(action, argparse._AppendAction):
                    continue  # a list: taken after parsing when no flag added to it
                action.default = FromFile(value)
                if key.name == "out":
                    action.required = False  # OUT/<trace name> then, see `resolve`


def resolve(parser: argparse.ArgumentParser, args: argparse.Namespace, found: Found) -> None:
    """The file's defaults made plain values; dropped where the command line gave the option's
    exclusive partner. `--out` from the file's `out` is OUT/<trace name>."""
    sub = _command_parsers(parser).get(getattr(args, "command", None) or "")
    if sub is None:
        return
    given = {a.dest for a in sub._actions if _given(a, args)}
    for group in sub._mutually_exclusive_groups:
        dests = {a.dest for a in group._group_actions}
        if dests & given:
            for dest in dests - given:
                if isinstance(getattr(args, dest, None), FromFile):
                    setattr(args, dest, _plain_default(sub, dest))
    for action in sub._actions:
        value = getattr(args, action.dest, None)
        if isinstance(value, FromFile):
            setattr(args, action.dest, value.value)
            if action.dest == "out":
                args.out = str(Path(value.value) / _run_name(args))
        elif isinstance(action, argparse._AppendAction) and not value:
            key = next((k for k in KEYS if k.dest == action.dest), None)
            if key is not None and key.name in found.values:
                setattr(args, action.dest, list(found.values[key.name]))


def _given(action: argparse.Action, args: argparse.Namespace) -> bool:
    """Whether the command line set this option (its value is not the parser's default)."""
    if not hasattr(args, action.dest):
        return False
    value = getattr(args, action.dest)
    if isinstance(action.default, FromFile):
        return not isinstance(value, FromFile)
    return value != action.default


def _plain_default(sub: argparse.ArgumentParser, dest: str) -> Any:
    for action in sub._actions:
        if action.dest == dest:
            return False if isinstance(action, argparse._StoreTrueAction) else None
    return None


def trace_stem(trace: str) -> str:
    """A trace's name without `.json` / `.json.gz` (`a/b.pt.trace.json.gz` -> `b.pt.trace`)."""
    name = Path(trace).name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name or "run"


def _run_name(args: argparse.Namespace) -> str:
    name = trace_stem(args.trace)
    second = getattr(args, "trace2", None)
    return f"{name}-vs-{trace_stem(second)}" if second else name


def log_level_of(args: argparse.Namespace, found: Found) -> str | None:
    """The `--log-level` given, else the file's (an explicit -v still wins over the file)."""
    if getattr(args, "log_level", None):
        return args.log_level
    if getattr(args, "verbose", 0):
        return None
    return found.values.get("log-level")
