"""The one way an input file is opened: traces, platform files, category tables, capture
sidecars. Only regular files are read, and side files only up to a size limit.

The path is stat'ed before it is opened, so a FIFO, device or socket is refused without being
touched (opening a FIFO blocks until a writer comes, which may be never; a device may have side
effects); it is then opened with O_NONBLOCK and fstat'ed again, which closes the race of a swap
between the two calls. Symbolic links are followed: where a file may lie is the path policy's
business (server/paths.py), what it may be is this module's. See docs/security.md.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from io import BufferedReader
from pathlib import Path
from typing import NoReturn

MIB = 2**20
# A platform file, a category table or a capture's execution_details.json is a few kilobytes;
# the limit bounds the memory a wrong file can take (a trace has its own, read.py).
MAX_SIDE_FILE_BYTES = 16 * MIB
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class InputFileError(ValueError):
    """An input file cannot be read; `problem` and `hint` are meant for whoever named it."""

    def __init__(self, path: Path | str, problem: str, hint: str = "") -> None:
        self.path = Path(path)
        self.problem = problem
        self.hint = hint
        text = f"{self.path}: {problem}"
        super().__init__(f"{text}. {hint}" if hint else text)


def require_regular_file(path: Path, what: str = "file") -> os.stat_result:
    """The stat of `path` if it is a regular file; InputFileError naming what it is otherwise
    (`what`, like "platform file", names the role in the message)."""
    with os_errors_named(path, what):
        st = path.stat()
    if not stat.S_ISREG(st.st_mode):
        _refuse_kind(path, st.st_mode, what)
    return st


def open_regular(path: Path, what: str = "file") -> BufferedReader:
    """`path` opened for binary reading, only if it is a regular file (checked before the open
    and on the open file)."""
    require_regular_file(path, what)
    with os_errors_named(path, what):
        fd = os.open(path, _OPEN_FLAGS)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        _refuse_kind(path, mode, what)
    return os.fdopen(fd, "rb")


def read_side_file(path: Path, what: str, limit: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """The bytes of a small input file (a platform file, a category table, a sidecar): a
    regular file of at most `limit` bytes, checked before any byte is read and while reading
    (a file that grows is stopped at the limit)."""
    with open_regular(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise InputFileError(
            path,
            f"is {max(size, len(data)):,} bytes, more than the {limit:,} a {what} may have",
            f"Pass the {what} itself; it is a few kilobytes of text",
        )
    return data


@contextmanager
def os_errors_named(path: Path, what: str = "file") -> Iterator[None]:
    """OSErrors of opening or stat'ing `path` as InputFileErrors that say what happened."""
    try:
        yield
    except FileNotFoundError:
        raise InputFileError(path, "file not found", "Check the path") from None
    except IsADirectoryError:
        raise InputFileError(path, f"is a folder, not a {what}") from None
    except PermissionError:
        raise InputFileError(path, "permission denied while reading the file") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot be opened ({exc.strerror or exc})") from None


def _refuse_kind(path: Path, mode: int, what: str) -> NoReturn:
    if stat.S_ISDIR(mode):
        raise InputFileError(path, f"is a folder, not a {what}")
    kind = next((text for test, text in _KINDS if test(mode)), "a special file")
    raise InputFileError(
        path,
        f"is {kind}, not a regular file",
        f"Save the {what} to a regular file and pass that",
    )
