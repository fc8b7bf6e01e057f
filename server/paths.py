"""Which files the server may read and write: the one place paths are resolved and checked.

Every path the server opens is resolved here (symlinks included) at the moment of use, and
must lie inside an allowed directory. A refusal names the allowed directories but never says
whether a path outside them exists or where a link points. See docs/security.md.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "ROOFLENS_ALLOWED_DIRS"


class PathRefused(ValueError):
    """A path the server will not touch; the message names the allowed directories."""


class BroadRoot(ValueError):
    """The implicit allowed directory would be the whole file system or a home folder."""


class PathPolicy:
    """Containment on real paths: `..`, symlinks and sibling prefixes cannot escape."""

    inside = " inside the allowed directories"  # where a job's files must be (a Scope)

    def __init__(self, allowed: list[Path]) -> None:
        if not allowed:
            raise ValueError("at least one allowed directory is needed")
        real = []
        for given in allowed:
            path = Path(os.path.realpath(Path(given).expanduser()))
            if not path.is_dir():
                raise ValueError(f"allowed directory {given} is not an existing folder")
            if path not in real:
                real.append(path)
        self.allowed = real

    @classmethod
    def from_env_and_args(cls, args: list[str] | None = None, *, broad: bool = False) -> PathPolicy:
        """Directories from ROOFLENS_ALLOWED_DIRS (os.pathsep-separated) plus `args`; else the
        current folder, unless that is `/` or the home folder (then `broad` must be set)."""
        env = [d for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d.strip()]
        dirs = [Path(d).expanduser() for d in [*env, *(args or [])]]
        if not dirs:
            cwd = Path(os.path.realpath(Path.cwd()))
            too_broad = cwd == Path(cwd.anchor) or cwd == Path(os.path.realpath(Path.home()))
            if too_broad and not broad:
                raise BroadRoot(
                    f"refusing to allow all of {cwd} (the current folder) by default; pass "
                    "--allow-dir DIR for the folder that holds your traces, or --allow-broad "
                    "to allow it on purpose"
                )
            dirs = [cwd]
        return cls(dirs)

    def describe(self) -> str:
        return ", ".join(str(p) for p in self.allowed)

    def anchor(self, text: str) -> Path:
        """The absolute path `text` names, links not resolved: a relative one is taken from
        the first allowed directory (a glob stays a glob, to be matched and checked)."""
        given = Path(text).expanduser()
        return given if given.is_absolute() else self.allowed[0] / given

    def contains(self, path: Path) -> bool:
        """Whether the real path of `path` (resolved now) lies inside an allowed directory;
        False when a link on the way cannot be followed (where it leads is unknown)."""
        try:
            real = Path(os.path.realpath(path))
        except (OSError, ValueError):
            return False
        return any(real.is_relative_to(root) for root in self.allowed)

    def resolve(self, path: str | Path, *, must_exist: bool, for_write: bool = False) -> Path:
        """The real path of `path` if it lies inside an allowed directory; else `PathRefused`.

        Relative paths are taken from the first allowed directory. Containment is checked
        before existence, and a path whose links cannot be followed is refused the same way,
        so nothing is revealed about paths outside.
        """
        text = str(path)
        if "\0" in text:
            raise PathRefused("the path contains a NUL byte; pass a plain file path")
        if not text.strip():
            raise PathRefused(f"the path is empty; pass a path under {self.describe()}")
        try:
            real = Path(os.path.realpath(self.anchor(text)))
        except OSError:  # a link that cannot be followed (/proc/1/cwd): refused like outside
            real = None
        if real is None or not any(real.is_relative_to(root) for root in self.allowed):
            raise PathRefused(
                f"{text} is outside the allowed directories ({self.describe()}); copy the file "
                "there, or start the server with its folder allowed (--allow-dir)"
            )
        if must_exist and not os.path.exists(real):
            raise PathRefused(
                f"{text} does not exist; pass an existing path under {self.describe()}"
            )
        if for_write and real.exists() and not os.access(real, os.W_OK):
            raise PathRefused(
                f"{text} is not writable; choose another folder under {self.describe()}"
            )
        return real

    def recheck(self, path: Path, what: str) -> Path:
        """Re-resolve a path stored earlier (a run folder, a restored run's trace): it must
        still lie inside, now that links may have changed."""
        try:
            return self.resolve(path, must_exist=True)
        except PathRefused:
            raise PathRefused(
                f"the {what} of this run no longer lies inside the allowed directories "
                f"({self.describe()}) or is gone; start a new run with load_trace"
            ) from None

    def folder_without_links(self, folder: Path) -> Path:
        """`folder`, checked inside, with no symbolic link anywhere below it (so nothing the
        engine writes there can land outside)."""
        real = self.recheck(folder, "output folder")
        for root, dirs, files in os.walk(real):
            for name in (*dirs, *files):
                if os.path.islink(os.path.join(root, name)):
                    raise PathRefused(
                        f"the run folder {real} contains a symbolic link ({name}); the server "
                        "does not write through links: remove it or start a new run"
                    )
        return real
