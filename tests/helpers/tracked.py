"""The files git tracks in the repository (the doc and wheel tests read exactly those)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def tracked_files(root: Path) -> list[Path]:
    """Files git tracks under root (skips when root is not a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [root / name for name in out.split("\0") if name and (root / name).is_file()]
