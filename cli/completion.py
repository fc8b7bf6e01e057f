"""`rooflens completion bash|zsh`: a shell completion script generated from the parser (shtab).

The script is built from the same parser `rooflens` runs, so it completes every command and
option there is; paths complete as files or folders, `--platform` with the catalogue's names.
shtab is imported only by this command.
"""

from __future__ import annotations

import argparse
import sys

SHELLS = ("bash", "zsh")
# shtab's own completers, by shell (shtab.FILE / shtab.DIRECTORY), named without importing it
FILE = {"bash": "_shtab_compgen_files", "zsh": "_files"}
DIRECTORY = {"bash": "_shtab_compgen_dirs", "zsh": "_files -/"}
FILE_DESTS = {"trace", "trace2", "traces", "target", "platform_file", "platform2_file"}
FILE_DESTS |= {"categories", "config", "run"}
DIRECTORY_DESTS = {"out", "capture_folder", "capture_folder2", "allow_dir", "workspace"}


def add_completion_parser(commands: argparse._SubParsersAction) -> None:
    command = commands.add_parser(
        "completion",
        help="print a shell completion script (bash or zsh)",
        description="Print a completion script for your shell. bash: "
        "`rooflens completion bash > ~/.local/share/bash-completion/completions/rooflens`; "
        "zsh: `rooflens completion zsh > ~/.zfunc/_rooflens` with ~/.zfunc in $fpath "
        "before compinit.",
    )
    command.add_argument("shell", choices=SHELLS, help="the shell: bash or zsh")


def run_completion(shell: str, parser: argparse.ArgumentParser) -> int:
    """Print the script for `shell` (one of SHELLS: argparse has refused the others)."""
    import shtab

    _mark_paths(parser, platform_names())
    sys.stdout.write(shtab.complete(parser, shell=shell))
    return 0


def platform_names() -> list[str]:
    from rooflens.analyzers.perf.platforms import platform_table

    return [row.name for row in platform_table()]


def _mark_paths(parser: argparse.ArgumentParser, platforms: list[str]) -> None:
    """Tell shtab which options take files or folders, and the names `--platform` takes."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                _mark_paths(sub, platforms)
        elif action.dest in FILE_DESTS:
            action.complete = FILE  # type: ignore[attr-defined]
        elif action.dest in DIRECTORY_DESTS:
            action.complete = DIRECTORY  # type: ignore[attr-defined]
        elif action.dest in ("platform", "platform2") and action.choices is None:
            action.choices = platforms  # only for the script: this parser is not run again
