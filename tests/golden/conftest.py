"""Locate ../shared (reference outputs and real traces); skip only where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path | None:
    configured = os.environ.get("ROOFLENS_SHARED")
    candidate = Path(configured) if configured else REPO.parent / "shared"
    return candidate if (candidate / "traces").is_dir() else None


@pytest.fixture(scope="session")
def shared() -> Path:
    found = shared_dir()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("../shared is missing in CI: golden tests must run there")
        pytest.skip("../shared (reference traces) not found next to the repo; set ROOFLENS_SHARED")
    return found
