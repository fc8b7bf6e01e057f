"""`python -m rooflens` and the `rooflens` console script: the command line, then a quick exit.

The namespace `rooflens` is assembled from several folders (pyproject `package-dir`); this
folder is the portion that holds only its `__main__`, so the namespace needs no `__init__`.

A finished command leaves through `os._exit` once its output is flushed: tearing down the
interpreter (freeing every table of a large trace, module by module) would add a quarter of a
second or more to each run and do nothing a process exit does not. Every file the engine
writes is closed by then (atomic writes close before they rename).
"""

import os
import sys

from rooflens.cli.common import EXIT_BROKEN_PIPE
from rooflens.cli.main import main


def run() -> None:
    """Run the command line and exit with its code, skipping the interpreter's teardown."""
    try:
        code = main()
    except SystemExit as exc:  # argparse's --help, --version and usage errors
        code = exc.code
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away before the last of the output
        code = EXIT_BROKEN_PIPE
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(code)


if __name__ == "__main__":
    run()
