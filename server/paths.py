"""Which files the server may read and write: the allowed directories, resolved through symlinks."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "ROOFLENS_ALLOWED_DIRS"


class PathRefused(ValueError):
    """A path the server will not touch; the message names the allowed directories."""


class PathPolicy:
    """Containment check on real paths: `..`, symlinks and sibling prefixes cannot escape."""

    def __init__(self, allowed: list[Path]) -> None:
        if not allowed:
            raise ValueError("at least one allowed directory is needed")
        self.allowed = [Path(os.path.realpath(p)) for p in allowed]

    @classmethod
    def from_env_and_args(cls, args: list[str] | None = None) -> PathPolicy:
        """Directories from ROOFLENS_ALLOWED_DIRS (os.pathsep-separated) plus `args`; else cwd."""
        env = [d for d in os.environ.get(ENV_VAR, "").split(os.pathsep) if d.strip()]
        dirs = [Path(d).expanduser() for d in [*env, *(args or [])]]
        return cls(dirs or [Path.cwd()])

    def describe(self) -> str:
        return ", ".join(str(p) for p in self.allowed)

    def contains(self, path: Path) -> bool:
        return any(path.is_relative_to(root) for root in self.allowed)

    def resolve(self, path: str, *, must_exist: bool, for_write: bool = False) -> Path:
        """The real path of `path` if it lies inside an allowed directory; else `PathRefused`."""
        if "\0" in path:
            raise PathRefused("the path contains a NUL byte; pass a plain file path")
        if not path.strip():
            raise PathRefused(f"the path is empty; pass a file under {self.describe()}")
        given = Path(path).expanduser()
        if not given.is_absolute():
            given = self.allowed[0] / given
        if given.exists():
            real = Path(os.path.realpath(given))
        elif must_exist:
            raise PathRefused(
                f"{path} does not exist; pass an existing file under {self.describe()}"
            )
        else:
            parent = Path(os.path.realpath(given.parent))
            real = parent / given.name
        if not self.contains(real):
            raise PathRefused(
                f"{path} resolves to {real}, which is outside the allowed directories "
                f"({self.describe()}); copy the file there or start the server with "
                f"that directory allowed"
            )
        if for_write and real.exists() and not os.access(real, os.W_OK):
            raise PathRefused(
                f"{real} is not writable; choose another folder under {self.describe()}"
            )
        return real
