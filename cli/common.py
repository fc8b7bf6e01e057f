"""What every `rooflens` command shares: exit codes, one-line errors, JSON output, the version.

Kept free of heavy imports: `cli.py` imports it to build the parser, and `rooflens --help`
must not pay for pandas, matplotlib or the MCP SDK.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK = 0
EXIT_PROBLEMS = 1  # `validate`: the folder was read, and some check failed
EXIT_BAD_INPUT = 2  # unreadable trace, bad platform, refused or unwritable --out, usage
EXIT_GATE = 3  # `compare --gate`: trace 1 slower than trace 2 beyond the threshold and noise
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT), as shells report it
EXIT_BROKEN_PIPE = 141  # the reader of stdout went away (128 + SIGPIPE), e.g. `| head`


def fail(message: str) -> int:
    """Print one line on stderr and return the bad-input exit code."""
    print(f"rooflens: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def print_json(document: Any) -> None:
    """One JSON object on stdout (for `--json`)."""
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


def capture_choice(args: argparse.Namespace) -> str | None:
    """`open_trace`'s `captures` argument from --capture-folder / --no-captures."""
    from rooflens.analyzers.trace.open_trace import AUTO

    if args.no_captures:
        return None
    return args.capture_folder or AUTO
