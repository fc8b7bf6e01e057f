"""`rooflens config`: the config file in force, every key, its value and where it came from."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_OK, print_json
from .config import FILE_NAME, KEYS, PYPROJECT, Found


def add_config_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "config",
        help="print the options the config file sets and where each comes from",
        description="Print the config file in force (--config, else the nearest rooflens.toml "
        "or pyproject.toml with [tool.rooflens] from the current folder upward), every key "
        "it may set, the value in force and where it came from. Flags on a command's line "
        "win over the file.",
    )
    command.add_argument(
        "--json", action="store_true", help="print one JSON object on stdout instead of text"
    )


def run_config(args: argparse.Namespace, found: Found, level: str) -> int:
    """`rooflens config`: the file, then each key with its value and source."""
    rows = []
    for key in KEYS:
        if key.name in found.values:
            value, source = found.values[key.name], str(found.path)
        else:
            value, source = None, "default"
        if key.name == "log-level":
            value = level
            if getattr(args, "log_level", None) or getattr(args, "verbose", 0):
                source = "command line"
        uses = ", ".join(key.commands) if key.commands else "any command that takes it"
        rows.append(
            {"key": key.name, "value": value, "source": source, "commands": uses, "help": key.help}
        )
    document = {
        "config_file": str(found.path) if found.path else None,
        "searched_from": str(found.searched_from) if found.searched_from else None,
        "options": rows,
    }
    if args.json:
        print_json(document)
        return EXIT_OK
    import json

    out = sys.stdout
    if found.path:
        out.write(f"Config file: {found.path}\n")
    elif found.searched_from:
        out.write(
            f"Config file: none ({FILE_NAME}, or {PYPROJECT} with [tool.rooflens], searched "
            f"from {found.searched_from} upward)\n"
        )
    else:
        out.write("Config file: none (--no-config)\n")
    width = max(len(k.name) for k in KEYS) + 2
    for row in rows:
        shown = "-" if row["value"] is None else json.dumps(row["value"])
        out.write(f"  {row['key']:<{width}}{shown}  ({row['source']})\n")
    out.write("Flags on a command's line win over the file.\n")
    return EXIT_OK
