"""Options every command takes, before or after its name: logging and the config file.

`rooflens -v analyze ...` and `rooflens analyze ... -v` mean the same: the options are on the
top-level parser and on every command's parser (there with no default, so a command's parser
does not reset what the top level set). `--config`/`--no-config` are also read before the
parser runs (`prescan`), because the config file supplies the parsers' defaults.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NamedTuple

from .logging_setup import LEVELS


def add_global_options(parser: argparse.ArgumentParser, commands: argparse._SubParsersAction):
    """The options on the top-level parser and on every command's parser."""
    _options(parser, top=True)
    for sub in {id(p): p for p in commands.choices.values()}.values():  # aliases: once
        _options(sub, top=False)


def _options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    unset = {} if top else {"default": argparse.SUPPRESS}
    group = parser.add_argument_group("output and configuration (any command)")
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        help="log more: -v INFO (the MCP SDK's and HTTP server's lines), -vv DEBUG",
        **({"default": 0} if top else unset),
    )
    group.add_argument(
        "--log-level",
        metavar="LEVEL",
        help=f"log level ({', '.join(LEVELS)}; default WARNING); wins over -v",
        **unset,
    )
    where = group.add_mutually_exclusive_group()
    where.add_argument(
        "--config",
        metavar="FILE",
        help="read options from this TOML file (default: the nearest rooflens.toml or "
        "pyproject.toml with [tool.rooflens], from the current folder upward)",
        **unset,
    )
    where.add_argument(
        "--no-config",
        action="store_true",
        help="read no config file",
        **({"default": False} if top else unset),
    )


class Prescan(NamedTuple):
    """`--config`/`--no-config` as given anywhere on the command line."""

    config: str | None = None
    no_config: bool = False


def prescan(argv: Sequence[str]) -> Prescan:
    """The config-file options, read before the real parser (which needs the file's values).
    Usage errors are left to the real parser, which reports them."""
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    early.add_argument("--config")
    early.add_argument("--no-config", action="store_true")
    try:
        known, _ = early.parse_known_args(list(argv))
    except argparse.ArgumentError:  # `--config` without a value: the real parser says so
        return Prescan()
    return Prescan(config=known.config, no_config=known.no_config)
